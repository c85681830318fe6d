/// Appending JSON pieces to an output buffer.
///
/// Server frames are built by appending to a reusable `[UInt8]` instead of going through
/// `String` or Foundation: that keeps the per-event cost at a few bulk copies, and lets a
/// publisher's `data` bytes be copied through verbatim with `appendRaw`.
extension Array where Element == UInt8 {
    /// Appends `bytes` as a quoted JSON string.
    ///
    /// Escapes `"`, `\` and the control characters (U+0000 to U+001F) that RFC 8259 forbids
    /// raw; everything else, UTF-8 sequences included, is copied as is, because the input is
    /// already valid UTF-8 (the scanner checked it) and JSON allows it unescaped. Runs without
    /// anything to escape are appended in bulk, so the common case is one copy.
    /// - Parameter bytes: the string's contents as UTF-8, without quotes.
    public mutating func appendJSONString(_ bytes: UnsafeRawBufferPointer) {
        append(UInt8(ascii: "\""))
        var runStart = 0
        while true {
            let hit = JSONOutputTables.firstEscape(in: bytes, from: runStart)
            appendRaw(UnsafeRawBufferPointer(rebasing: bytes[runStart..<hit]))
            guard hit < bytes.count else { break }
            appendEscape(bytes[hit])
            runStart = hit + 1
        }
        append(UInt8(ascii: "\""))
    }

    /// Appends `bytes` as a quoted JSON string; see ``appendJSONString(_:)-(UnsafeRawBufferPointer)``.
    /// - Parameter bytes: the string's contents as UTF-8, without quotes.
    public mutating func appendJSONString(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { appendJSONString($0) }
    }

    /// Appends a `String` as a quoted JSON string, for cold paths such as error messages.
    /// - Parameter s: the string; its UTF-8 is escaped as for raw bytes.
    public mutating func appendJSONString(_ s: String) {
        var s = s
        s.withUTF8 { appendJSONString(UnsafeRawBufferPointer($0)) }
    }

    /// Appends an integer in decimal, two digits per step, without building a `String`.
    ///
    /// Works on the magnitude as `UInt`, so `Int.min` (whose negation overflows) is handled.
    /// - Parameter v: the integer.
    public mutating func appendInt(_ v: Int) {
        if v < 0 { append(UInt8(ascii: "-")) }
        let magnitude = v.magnitude
        // 20 bytes hold UInt64.max; the digits end at the buffer's end.
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            guard let base = digits.baseAddress else { return }
            let length = DecimalDigits.count(magnitude)
            DecimalDigits.write(magnitude, endingAt: base + 20)
            append(contentsOf: UnsafeBufferPointer(start: base + 20 - length, count: length))
        }
    }

    /// Appends bytes verbatim: JSON that is already well-formed, such as a publisher's `data`.
    /// - Parameter bytes: the bytes to copy.
    public mutating func appendRaw(_ bytes: UnsafeRawBufferPointer) {
        guard !bytes.isEmpty else { return }
        // Seen as typed bytes, the append is a memcpy; a raw buffer goes byte by byte.
        bytes.withMemoryRebound(to: UInt8.self) { append(contentsOf: $0) }
    }

    /// Appends a literal fragment verbatim, e.g. `buffer.appendRaw(#"{"ok":"sub","sub":"#)`.
    ///
    /// A `StaticString` points at constant data, so this costs one copy and no allocation.
    /// - Parameter s: the fragment.
    public mutating func appendRaw(_ s: StaticString) {
        s.withUTF8Buffer { append(contentsOf: $0) }
    }

    /// Appends the escape sequence for one byte that ``JSONOutputTables/isNeeded(_:)`` flagged.
    private mutating func appendEscape(_ byte: UInt8) {
        append(UInt8(ascii: "\\"))
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"): append(byte)
        case 0x0A: append(UInt8(ascii: "n"))
        case 0x0D: append(UInt8(ascii: "r"))
        case 0x09: append(UInt8(ascii: "t"))
        case 0x08: append(UInt8(ascii: "b"))
        case 0x0C: append(UInt8(ascii: "f"))
        default:
            appendRaw("u00")
            append(JSONOutputTables.hexDigits[Int(byte >> 4)])
            append(JSONOutputTables.hexDigits[Int(byte & 0x0F)])
        }
    }
}

/// The escape scan and constant tables behind the JSON output helpers.
///
/// The tables are `StaticString`-backed pointers into read-only data, so reading them needs
/// neither an allocation nor the lazy-initialisation check a global array costs on every access.
@usableFromInline
enum JSONOutputTables {
    /// Whether a byte must be escaped inside a JSON string.
    @inline(__always)
    static func isNeeded(_ byte: UInt8) -> Bool {
        byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\")
    }

    /// The index of the first byte at or after `start` that must be escaped, or `bytes.count`.
    ///
    /// Tests eight bytes per step with the classic SWAR "has a byte below n" and "has a zero
    /// byte" tricks; both are exact as yes/no answers, so a flagged word is then searched byte
    /// by byte and an unflagged one is skipped whole.
    static func firstEscape(in bytes: UnsafeRawBufferPointer, from start: Int) -> Int {
        var index = start
        while index &+ 8 <= bytes.count {
            let word = bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self)
            if wordNeedsEscape(word) { break }
            index &+= 8
        }
        while index < bytes.count {
            if isNeeded(bytes[index]) { return index }
            index &+= 1
        }
        return bytes.count
    }

    /// Whether any of the eight bytes in `word` must be escaped.
    @inline(__always)
    private static func wordNeedsEscape(_ word: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        let hasControl = (word &- ones &* 0x20) & ~word & highs
        let quote = word ^ (ones &* 0x22)
        let backslash = word ^ (ones &* 0x5C)
        let hasQuote = (quote &- ones) & ~quote & highs
        let hasBackslash = (backslash &- ones) & ~backslash & highs
        return (hasControl | hasQuote | hasBackslash) != 0
    }

    /// "00" through "99", two ASCII digits per number.
    @inlinable
    static var digitPairs: UnsafePointer<UInt8> {
        let table: StaticString = """
            00010203040506070809101112131415161718192021222324252627282930313233343536373839\
            40414243444546474849505152535455565758596061626364656667686970717273747576777879\
            8081828384858687888990919293949596979899
            """
        return table.utf8Start
    }

    /// Lowercase hex digits for `\u00XX` escapes.
    static var hexDigits: UnsafePointer<UInt8> {
        let table: StaticString = "0123456789abcdef"
        return table.utf8Start
    }
}
