/// Checks UTF-8 as it arrives in pieces (RFC 3629, as RFC 6455 asks of text messages):
/// a character may be split between two pieces, so the validator keeps how many
/// continuation bytes it still expects and the range the next one must fall in (which
/// rules out overlong forms, surrogates and code points past U+10FFFF). ASCII, the
/// protocol's usual text, is checked eight bytes at a time.
struct UTF8Validator {
    /// Continuation bytes still expected for the current character.
    private var needed = 0
    /// The range the next continuation byte must be in (narrower right after some leads).
    private var low: UInt8 = 0x80
    private var high: UInt8 = 0xBF

    /// Whether the input so far ends on a character boundary.
    var isComplete: Bool { needed == 0 }

    /// Checks `bytes`, continuing where the last piece stopped. - Returns: false at the
    /// first byte that cannot be UTF-8 (the state is then meaningless).
    mutating func feed(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard let base = bytes.baseAddress else { return true }
        var at = 0
        let count = bytes.count
        while at < count {
            if needed == 0 {
                // ASCII runs: eight bytes at a time, then byte by byte, without leaving here.
                while at + 8 <= count, (base + at).loadUnaligned(as: UInt64.self) & 0x8080_8080_8080_8080 == 0 { at += 8 }
                while at < count, (base + at).load(as: UInt8.self) < 0x80 { at += 1 }
                if at == count { return true }
            }
            guard step((base + at).load(as: UInt8.self)) else { return false }
            at += 1
        }
        return true
    }

    /// Checks an array (tests, close reasons).
    mutating func feed(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { feed($0) }
    }

    /// One byte.
    private mutating func step(_ byte: UInt8) -> Bool {
        if needed > 0 {
            guard byte >= low && byte <= high else { return false }
            needed -= 1
            low = 0x80
            high = 0xBF
            return true
        }
        switch byte {
        case 0x00...0x7F: return true
        case 0xC2...0xDF: needed = 1
        case 0xE0: (needed, low) = (2, 0xA0)
        case 0xE1...0xEC, 0xEE...0xEF: needed = 2
        case 0xED: (needed, high) = (2, 0x9F)
        case 0xF0: (needed, low) = (3, 0x90)
        case 0xF1...0xF3: needed = 3
        case 0xF4: (needed, high) = (3, 0x8F)
        default: return false
        }
        return true
    }
}
