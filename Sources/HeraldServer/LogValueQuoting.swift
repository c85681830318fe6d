/// Decides whether a log value needs quotes and writes it JSON-escaped when it does.
///
/// Bare `key=value` pairs are easy to read and to grep; quoting only what would otherwise be
/// ambiguous (a space, `=`, a quote, a backslash, a control character, or nothing at all) keeps
/// lines splittable by `logfmt` parsers without cluttering the common case.
enum LogValueQuoting {
    /// Whether `value` must be quoted to survive a split on spaces and `=`.
    static func needsQuotes(_ value: String) -> Bool {
        if value.isEmpty { return true }
        return value.unicodeScalars.contains { scalar in
            scalar == " " || scalar == "=" || scalar == "\"" || scalar == "\\" || scalar.value < 0x20 || scalar.value == 0x7F
        }
    }

    /// The value as written into a line: bare when safe, else a JSON string literal.
    static func rendered(_ value: String) -> String {
        needsQuotes(value) ? quoted(value) : value
    }

    /// The value as a JSON string literal, with quotes, backslashes and control characters escaped.
    static func quoted(_ value: String) -> String {
        var out = "\""
        out.reserveCapacity(value.utf8.count + 2)
        for scalar in value.unicodeScalars {
            out += escaped(scalar)
        }
        out += "\""
        return out
    }

    /// Escapes control characters so a message can never break the one-line-per-event rule.
    static func escapingControlCharacters(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: isControl) else { return text }
        var out = ""
        for scalar in text.unicodeScalars {
            out += isControl(scalar) ? escaped(scalar) : String(scalar)
        }
        return out
    }

    private static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || scalar.value == 0x7F
    }

    private static func escaped(_ scalar: Unicode.Scalar) -> String {
        switch scalar {
        case "\"": return "\\\""
        case "\\": return "\\\\"
        case "\n": return "\\n"
        case "\r": return "\\r"
        case "\t": return "\\t"
        default:
            guard isControl(scalar) else { return String(scalar) }
            let hex = String(scalar.value, radix: 16)
            return "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
        }
    }
}
