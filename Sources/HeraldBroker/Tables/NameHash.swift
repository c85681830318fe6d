/// The hash of a channel name for `NameTable` (issue 35): keyed like SipHash, several times
/// cheaper for short names.
///
/// Why: Swift's `Hasher` (SipHash-1-3) spent about 300 instructions per lookup on a 12-byte
/// name, its set-up and finalization more than the bytes: a sixth of a publish to one of many
/// channels. This is a multiply-and-fold hash in wyhash's shape (16 bytes per round: each
/// 8-byte word xored with a secret, multiplied to 128 bits, the halves folded), about 40
/// instructions for such a name. Its secrets are random per process, so a client cannot
/// compute names that collide; Go's maps rely on the same kind of seeded hash for keys from
/// the network. `NameTable` also watches for the long probe runs a flood would cause and
/// gives the shard a fresh seed if one ever shows (`NameTableShard.floodProbeLimit`).
struct NameHash {
    /// The secrets: random per process (`processWide`), or a shard's own after a flood.
    let first: UInt64
    let second: UInt64

    /// The process's secrets, drawn once from the system's random source.
    static let processWide = NameHash.random()

    /// Fresh random secrets.
    static func random() -> NameHash {
        var generator = SystemRandomNumberGenerator()
        return NameHash(first: generator.next() | 1, second: generator.next() | 1)
    }

    /// Folds the 128-bit product of `a` and `b`.
    @inline(__always)
    private static func fold(_ a: UInt64, _ b: UInt64) -> UInt64 {
        let product = a.multipliedFullWidth(by: b)
        return product.high ^ product.low
    }

    /// The hash of `bytes`; never 0 (0 marks an empty slot).
    @inline(__always)
    func hash(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
        let count = bytes.count
        var state = second ^ (UInt64(truncatingIfNeeded: count) &* 0x9E37_79B9_7F4A_7C15)
        var at = 0
        while count - at > 16 {
            let a = bytes.loadUnaligned(fromByteOffset: at, as: UInt64.self)
            let b = bytes.loadUnaligned(fromByteOffset: at + 8, as: UInt64.self)
            state = Self.fold(a ^ first, b ^ state)
            at += 16
        }
        let rest = count - at
        var a: UInt64 = 0
        var b: UInt64 = 0
        if rest >= 8 {
            a = bytes.loadUnaligned(fromByteOffset: at, as: UInt64.self)
            b = bytes.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self)
        } else if rest >= 4 {
            a = UInt64(bytes.loadUnaligned(fromByteOffset: at, as: UInt32.self))
            b = UInt64(bytes.loadUnaligned(fromByteOffset: count - 4, as: UInt32.self))
        } else if rest > 0 {
            a = UInt64(bytes[at]) << 16 | UInt64(bytes[at + rest / 2]) << 8 | UInt64(bytes[count - 1])
        }
        let mixed = Self.fold(first ^ UInt64(truncatingIfNeeded: count), Self.fold(a ^ first, b ^ state))
        return mixed == 0 ? 1 : mixed
    }

    /// The hash of `bytes`.
    @inline(__always)
    func hash(_ bytes: [UInt8]) -> UInt64 {
        bytes.withUnsafeBytes { hash($0) }
    }
}
