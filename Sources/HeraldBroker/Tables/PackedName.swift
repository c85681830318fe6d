/// A name of 1 to 7 bytes packed into one word: its bytes from the lowest byte up, its
/// length in the top byte. 0 means "not packed" (longer, or empty).
///
/// Why: a subscription's name (`s1`…`s9999999` from the daemon, `h1`… from the Swift
/// client) was an `[UInt8]` of its own, a 48-byte allocation per subscription. Packed, it
/// lives in the `Subscription` object and keys the session's table without any allocation
/// (docs/architecture.md, "Memory per subscription").
enum PackedName {
    /// Longest name that packs.
    static let capacity = 7

    /// The packed word for `bytes`, or 0 when they do not fit.
    static func word(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
        guard !bytes.isEmpty, bytes.count <= capacity else { return 0 }
        var word = UInt64(bytes.count) << 56
        for (offset, byte) in bytes.enumerated() { word |= UInt64(byte) << (8 * UInt64(offset)) }
        return word
    }

    /// The packed word for `bytes`, or 0 when they do not fit.
    static func word(_ bytes: [UInt8]) -> UInt64 {
        bytes.withUnsafeBytes { word($0) }
    }

    /// How many bytes a packed (non-zero) word holds.
    static func count(_ word: UInt64) -> Int {
        Int(truncatingIfNeeded: word >> 56)
    }

    /// Calls `body` with the bytes of a packed (non-zero) word, without allocating.
    @inline(__always)
    static func withBytes<Result>(_ word: UInt64, _ body: (UnsafeRawBufferPointer) -> Result) -> Result {
        withUnsafeBytes(of: word.littleEndian) { all in
            body(UnsafeRawBufferPointer(rebasing: all[0..<count(word)]))
        }
    }

    /// The bytes of a packed (non-zero) word.
    static func bytes(_ word: UInt64) -> [UInt8] {
        withBytes(word) { Array($0) }
    }
}
