/// A file permission mode written the way `chmod` takes it: `"0660"`, `"660"`, `"0600"`.
///
/// Config files carry it as a string because JSON has no octal literals: `660` would be
/// read as decimal 660 (`0o1224`), a mode nobody meant. Only the nine permission bits are
/// admitted; set-id and sticky bits mean nothing on the files the daemon makes.
enum OctalMode {
    /// The permission bits spelled by `text`.
    /// - Parameter text: three octal digits, or four with a leading `0`.
    /// - Returns: the mode, `0...0o777`, or nil when `text` is not such a spelling.
    static func bits(_ text: String) -> Int? {
        var digits = Array(text.utf8)
        if digits.count == 4, digits.first == UInt8(ascii: "0") { digits.removeFirst() }
        guard digits.count == 3 else { return nil }
        var mode = 0
        for digit in digits {
            guard digit >= UInt8(ascii: "0"), digit <= UInt8(ascii: "7") else { return nil }
            mode = mode * 8 + Int(digit - UInt8(ascii: "0"))
        }
        return mode
    }

    /// The four-digit spelling of `bits`, e.g. `0660`, for log lines and messages.
    /// - Parameter bits: a mode in `0...0o777` (higher bits are ignored).
    /// - Returns: `0` followed by three octal digits.
    static func text(_ bits: Int) -> String {
        let octal = String(bits & 0o777, radix: 8)
        return String(repeating: "0", count: 4 - octal.count) + octal
    }
}
