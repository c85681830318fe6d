/// The values one configuration key admits, shared by the config file and the command line.
///
/// One rule per key keeps the file loader and the flag parser from drifting apart, and gives
/// both the same "expected …" wording in their errors.
enum ValueRule: Sendable {
    /// An integer inside a closed range.
    case integer(ClosedRange<Int>)
    /// An integer of at least this value.
    case integerAtLeast(Int)
    /// `0` meaning "off", or an integer of at least this value.
    case integerOffOrAtLeast(Int)
    /// A non-empty string of at most this many UTF-8 bytes (`nil`: no limit).
    case text(maxBytes: Int?)
    /// One of these exact spellings.
    case choice([String])
    /// A nested object read by its own decoder (`auth`); the text describes its shape.
    case section(String)
    /// A permission mode as `chmod` takes it, a string of octal digits such as `"0660"`
    /// (`OctalMode`); a string because JSON has no octal numbers and `660` would be decimal.
    case octalMode
    /// `true` or `false` (`monitor_auth`).
    case boolean

    /// Whether an integer satisfies this rule; non-integer rules admit no integer.
    func admits(_ value: Int) -> Bool {
        switch self {
        case .integer(let range): return range.contains(value)
        case .integerAtLeast(let minimum): return value >= minimum
        case .integerOffOrAtLeast(let minimum): return value == 0 || value >= minimum
        case .text, .choice, .section, .octalMode, .boolean: return false
        }
    }

    /// Whether a string satisfies this rule; integer rules admit no string.
    func admits(_ value: String) -> Bool {
        switch self {
        case .text(let maxBytes):
            return !value.isEmpty && value.utf8.count <= (maxBytes ?? Int.max)
        case .choice(let choices):
            return choices.contains(value)
        case .octalMode:
            return OctalMode.bits(value) != nil
        case .integer, .integerAtLeast, .integerOffOrAtLeast, .section, .boolean:
            return false
        }
    }

    /// Whether the value is an integer (as opposed to a string); decides how to decode it.
    var isInteger: Bool {
        switch self {
        case .integer, .integerAtLeast, .integerOffOrAtLeast: return true
        case .text, .choice, .section, .octalMode, .boolean: return false
        }
    }

    /// The allowed values in words, for "(expected …)" in error messages.
    var expectation: String {
        switch self {
        case .integer(let range):
            return "an integer in \(range.lowerBound)...\(range.upperBound)"
        case .integerAtLeast(let minimum):
            return "an integer of at least \(minimum)"
        case .integerOffOrAtLeast(let minimum):
            return "0 (off) or an integer of at least \(minimum)"
        case .text(let maxBytes?):
            return "a non-empty string of at most \(maxBytes) bytes"
        case .text(nil):
            return "a non-empty string"
        case .choice(let choices):
            return "one of " + choices.map { "\"\($0)\"" }.joined(separator: ", ")
        case .section(let shape):
            return shape
        case .octalMode:
            return "an octal permission mode in quotes, \"0000\"...\"0777\", such as \"0660\""
        case .boolean:
            return "true or false"
        }
    }
}
