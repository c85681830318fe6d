#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Comparing runs of bytes where a call to `memcmp` costs more than the comparison.
public enum RawBytes {
    /// Whether the `count` bytes at `a` and at `b` are equal.
    ///
    /// Up to 16 bytes (most channel names) take two overlapping loads from each side and no
    /// call: a publisher's repeated channel checked with `memcmp` cost 42 instructions a
    /// publish (callgrind, 1→1 16 B).
    @inlinable @inline(__always)
    public static func areEqual(_ a: UnsafeRawPointer, _ b: UnsafeRawPointer, count: Int) -> Bool {
        switch count {
        case 8...16:
            return a.loadUnaligned(as: UInt64.self) == b.loadUnaligned(as: UInt64.self)
                && a.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self)
                    == b.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self)
        case 4..<8:
            return a.loadUnaligned(as: UInt32.self) == b.loadUnaligned(as: UInt32.self)
                && a.loadUnaligned(fromByteOffset: count - 4, as: UInt32.self)
                    == b.loadUnaligned(fromByteOffset: count - 4, as: UInt32.self)
        case 1..<4:
            for offset in 0..<count where a.load(fromByteOffset: offset, as: UInt8.self) != b.load(fromByteOffset: offset, as: UInt8.self) {
                return false
            }
            return true
        case ...0:
            return true
        default:
            return memcmp(a, b, count) == 0
        }
    }
}
