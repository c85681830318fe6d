/// Maps a top-level key's bytes to its `RequestField` without building a `String`.
///
/// Why a table built from `RequestField.allCases` rather than a hand-written switch: adding a
/// field to the enum is then the only change needed. Keys are packed into two little-endian
/// words (every known key is at most 16 bytes), hashed into a small open-addressed table and
/// compared word-wise, so a lookup is a couple of loads and a handful of integer operations.
///
/// The table is built once per process and never freed; it is immutable afterwards, which is
/// what makes the `@unchecked Sendable` sound.
final class RequestKeyTable: @unchecked Sendable {
    /// One slot of the table; `length == 0` marks an empty slot.
    struct Slot {
        var low: UInt64 = 0
        var high: UInt64 = 0
        var length: Int = 0
        var field: RequestField = .op
    }

    /// The table shared by every scanner.
    static let shared = RequestKeyTable()

    /// The longest key that can be packed; longer keys are never known fields.
    static let maxPackedLength = 16

    /// The open-addressed slots (a power of two of them), alive for the whole process.
    let slots: UnsafeMutablePointer<Slot>
    /// `slot count - 1`, for wrapping probe indices.
    let mask: Int
    /// The longest known key, so longer keys are dismissed before packing.
    let longestKey: Int

    /// Builds the table from `RequestField.allCases`.
    private init() {
        let fields = RequestField.allCases
        var size = 8
        while size < fields.count * 4 { size *= 2 }  // load factor ≤ 1/4 keeps probe chains short
        slots = .allocate(capacity: size)
        slots.initialize(repeating: Slot(), count: size)
        mask = size - 1
        var longest = 0
        for field in fields {
            let bytes = Array(field.key.utf8)
            precondition(bytes.count <= Self.maxPackedLength && !bytes.isEmpty, "request keys are 1...16 bytes")
            longest = max(longest, bytes.count)
            let (low, high) = bytes.withUnsafeBytes { Self.pack($0.baseAddress, $0.count, available: $0.count) }
            var index = Self.hash(low, high, bytes.count) & mask
            while slots[index].length != 0 { index = (index + 1) & mask }
            slots[index] = Slot(low: low, high: high, length: bytes.count, field: field)
        }
        longestKey = longest
    }

    /// Looks up an (already unescaped) key.
    /// - Parameters:
    ///   - key: the key's first byte.
    ///   - length: the key's length in bytes.
    ///   - available: bytes readable from `key` (at least `length`); when 16 or more, the key
    ///     is packed with two word loads instead of byte by byte.
    /// - Returns: the field the key names, or nil for an unknown key.
    @inline(__always)
    func field(_ key: UnsafeRawPointer?, length: Int, available: Int) -> RequestField? {
        guard length <= longestKey, length > 0 else { return nil }
        let (low, high) = Self.pack(key, length, available: available)
        var index = Self.hash(low, high, length) & mask
        while true {
            let slot = slots[index]
            if slot.length == 0 { return nil }
            if slot.low == low && slot.high == high && slot.length == length { return slot.field }
            index = (index &+ 1) & mask
        }
    }

    /// Packs `length` (≤ 16) bytes into two little-endian words, zero-padded.
    @inline(__always)
    static func pack(_ key: UnsafeRawPointer?, _ length: Int, available: Int) -> (UInt64, UInt64) {
        guard let key, length > 0 else { return (0, 0) }
        if available >= 16 {
            // The common case: the line continues past the key, so over-read and mask.
            let low = UInt64(littleEndian: key.loadUnaligned(as: UInt64.self))
            let high = UInt64(littleEndian: key.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
            let lowMask: UInt64 = length >= 8 ? ~0 : (1 &<< UInt64(8 &* length)) &- 1
            let highMask: UInt64 = length <= 8 ? 0 : length >= 16 ? ~0 : (1 &<< UInt64(8 &* (length &- 8))) &- 1
            return (low & lowMask, high & highMask)
        }
        var low: UInt64 = 0
        var high: UInt64 = 0
        for i in 0..<min(length, maxPackedLength) {
            let byte = UInt64(key.load(fromByteOffset: i, as: UInt8.self))
            if i < 8 { low |= byte &<< UInt64(8 &* i) } else { high |= byte &<< UInt64(8 &* (i &- 8)) }
        }
        return (low, high)
    }

    /// Mixes the packed key and its length (so `"op"` and `"op\u0000"` differ) into a slot index.
    @inline(__always)
    private static func hash(_ low: UInt64, _ high: UInt64, _ length: Int) -> Int {
        let mixed = (low ^ (high &* 0xC2B2_AE3D_27D4_EB4F) ^ UInt64(length)) &* 0x9E37_79B9_7F4A_7C15
        return Int(truncatingIfNeeded: mixed >> 40)
    }
}
