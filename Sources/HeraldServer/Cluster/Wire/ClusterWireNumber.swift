/// The one reader of the decimal numbers in interest-channel messages (nodes, versions,
/// owners, lengths, scores): ASCII digits only, at least one and at most 18, so a number
/// from a peer never overflows an `Int` (19 digits and more are refused, never trapped on).
enum ClusterWireNumber {
    /// The most digits a number may have.
    static let maxDigits = 18

    /// Reads the number at `at`, leaving `at` on the first byte after its digits.
    /// - Returns: nil when there are no digits there or too many.
    static func read(_ payload: [UInt8], at: inout Int) -> Int? {
        var value = 0
        var digits = 0
        while at < payload.count, payload[at] >= UInt8(ascii: "0"), payload[at] <= UInt8(ascii: "9") {
            guard digits < maxDigits else { return nil }
            value = value * 10 + Int(payload[at] - UInt8(ascii: "0"))
            digits += 1
            at += 1
        }
        return digits > 0 ? value : nil
    }

    /// A whole field as a number. - Returns: nil when it holds anything but 1 to 18 digits.
    static func parse<Bytes: Collection<UInt8>>(_ field: Bytes) -> Int? {
        let bytes = Array(field)
        var at = 0
        guard let value = read(bytes, at: &at), at == bytes.count else { return nil }
        return value
    }

    /// Steps over `byte` at `at`. - Returns: whether it was there.
    static func skip(_ byte: UInt8, in payload: [UInt8], at: inout Int) -> Bool {
        guard at < payload.count, payload[at] == byte else { return false }
        at += 1
        return true
    }
}
