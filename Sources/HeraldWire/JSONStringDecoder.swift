/// Resolves the escapes of a JSON string the scanner has already validated.
///
/// Why separate from validation: the scanner only proves a string well-formed; most strings
/// (channel names, ids) have no escapes and are used in place, so decoding is paid only by
/// the few that need it, and only when an accessor asks.
enum JSONStringDecoder {
    /// Decodes the contents `start..<end` (between the quotes) into `destination`.
    ///
    /// The decoded form is never longer than the escaped one (`\uXXXX` → at most 3 bytes,
    /// a 12-byte surrogate pair → 4), so `capacity == end - start` always suffices.
    /// Malformed input cannot occur after a successful scan; if it did, the bytes are
    /// copied as is rather than trapping.
    /// - Parameters:
    ///   - input: the scanned line.
    ///   - start: offset of the first content byte (past the opening quote).
    ///   - end: offset of the closing quote.
    ///   - destination: where to write the UTF-8 result.
    ///   - capacity: the bytes available at `destination`.
    /// - Returns: the number of bytes written, or nil when the result would exceed `capacity`.
    static func decode(
        _ input: JSONInput, from start: Int, to end: Int,
        into destination: UnsafeMutableRawPointer, capacity: Int
    ) -> Int? {
        var written = 0
        var i = start
        while i < end {
            var byte = input[i]
            var scalar: UInt32 = 0
            if byte == ASCII.backslash && i &+ 1 < end {
                (scalar, i) = escapedScalar(input, at: i, end: end)
                if scalar < 0x80 { byte = UInt8(scalar) }
            } else {
                i &+= 1
            }
            if scalar < 0x80 {
                guard written < capacity else { return nil }
                destination.storeBytes(of: byte, toByteOffset: written, as: UInt8.self)
                written &+= 1
            } else {
                guard let next = encode(scalar, into: destination, at: written, capacity: capacity) else { return nil }
                written = next
            }
        }
        return written
    }

    /// Decodes the escape whose backslash is at `offset`.
    /// - Returns: the Unicode scalar value and the offset past the escape.
    private static func escapedScalar(_ input: JSONInput, at offset: Int, end: Int) -> (UInt32, Int) {
        switch input[offset &+ 1] {
        case 0x62: return (0x08, offset &+ 2)  // \b
        case 0x66: return (0x0C, offset &+ 2)  // \f
        case 0x6E: return (0x0A, offset &+ 2)  // \n
        case 0x72: return (0x0D, offset &+ 2)  // \r
        case 0x74: return (0x09, offset &+ 2)  // \t
        case ASCII.lowerU:
            guard let high = hexQuad(input, at: offset, end: end) else { return (UInt32(ASCII.backslash), offset &+ 1) }
            guard high >= 0xD800 && high <= 0xDBFF else { return (high, offset &+ 6) }
            guard offset &+ 12 <= end, let low = hexQuad(input, at: offset &+ 6, end: end),
                  low >= 0xDC00 && low <= 0xDFFF
            else { return (0xFFFD, offset &+ 6) }
            return (0x10000 &+ ((high &- 0xD800) &<< 10) &+ (low &- 0xDC00), offset &+ 12)
        default: return (UInt32(input[offset &+ 1]), offset &+ 2)  // \" \\ \/
        }
    }

    /// The value of the four hex digits after `\u` at `offset`, or nil if they are not there.
    private static func hexQuad(_ input: JSONInput, at offset: Int, end: Int) -> UInt32? {
        guard offset &+ 6 <= end, input[offset &+ 1] == ASCII.lowerU else { return nil }
        var value: UInt32 = 0
        for i in (offset &+ 2)..<(offset &+ 6) {
            guard let digit = ASCII.hexValue(input[i]) else { return nil }
            value = value &<< 4 | digit
        }
        return value
    }

    /// Writes `scalar` (≥ 0x80) as UTF-8 at `offset`.
    /// - Returns: the offset past the written bytes, or nil when they would exceed `capacity`.
    private static func encode(
        _ scalar: UInt32, into destination: UnsafeMutableRawPointer, at offset: Int, capacity: Int
    ) -> Int? {
        let length = scalar < 0x800 ? 2 : scalar < 0x10000 ? 3 : 4
        guard offset &+ length <= capacity else { return nil }
        let leadMarker: UInt32 = length == 2 ? 0xC0 : length == 3 ? 0xE0 : 0xF0
        var shift = UInt32(6 &* (length &- 1))
        destination.storeBytes(of: UInt8(truncatingIfNeeded: leadMarker | (scalar &>> shift)), toByteOffset: offset, as: UInt8.self)
        for i in 1..<length {
            shift &-= 6
            let continuation = UInt8(truncatingIfNeeded: 0x80 | ((scalar &>> shift) & 0x3F))
            destination.storeBytes(of: continuation, toByteOffset: offset &+ i, as: UInt8.self)
        }
        return offset &+ length
    }
}
