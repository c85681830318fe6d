import HeraldWire

/// A reusable byte buffer for the parts of an event frame that every subscriber shares.
///
/// Built once per publish and appended to each subscriber's queue, so it is reset and
/// refilled millions of times a second: it manages its own memory, because an `[UInt8]`'s
/// `removeAll(keepingCapacity:)` costs a generic `replaceSubrange` on every reset.
///
/// In front of the contents it keeps `headroom` bytes, where `prefixed` puts one subscriber's
/// prefix so that prefix and shared parts go to that subscriber's queue in one append.
final class FrameScratch {
    /// Where the contents start; the allocation starts `headroom` bytes before.
    private var base: UnsafeMutableRawPointer
    private var capacity: Int
    /// Bytes written since the last `reset`.
    private(set) var count = 0
    /// Room for a prefix in front of the contents (`prefixed`): a frame prefix is
    /// `{"event":"CH","sub":"NAME"`, under 600 bytes for the longest plain names.
    static let headroom = 1024

    /// The digits of the last `seq` written by `appendSeq`, left-aligned in three
    /// little-endian words (`seqWords`).
    ///
    /// Why: formatting a seq afresh was ~90 instructions a publish (callgrind, 1→1 16 B), and
    /// the next publish's seq is nearly always the same value (many channels taking turns)
    /// or one more (one channel): three word stores, and an increment of the last digit.
    /// The digits live in registers' worth of words, not in memory: incrementing a byte in
    /// memory and then loading the word around it stalled on store forwarding, 70% of
    /// `appendSeq`'s cycles and 2.3% of the daemon's at 1→1 256 B (`perf annotate`).
    private var seqValue = -1
    private var seqCount = 0
    private var seqWords: (UInt64, UInt64, UInt64) = (0, 0, 0)
    private static let seqWidth = 24

    init(capacity: Int = 4096) {
        self.capacity = capacity
        self.base = UnsafeMutableRawPointer.allocate(byteCount: Self.headroom + capacity, alignment: 16) + Self.headroom
    }

    deinit {
        (base - Self.headroom).deallocate()
    }

    /// `prefix` followed by the contents up to `end`, as one run of bytes: the prefix is
    /// copied into the headroom just in front of the contents. Valid until the next call or
    /// write; nil when the prefix is longer than the headroom.
    ///
    /// Why: a delivery appended its prefix and the shared parts to the subscriber's queue
    /// separately, and each `Array` append costs about 85 instructions besides the copy;
    /// copying the prefix here costs a `memcpy` of a few dozen bytes.
    @inline(__always)
    func prefixed(_ prefix: UnsafeRawBufferPointer, upTo end: Int) -> UnsafeRawBufferPointer? {
        guard prefix.count <= Self.headroom, let source = prefix.baseAddress else { return nil }
        let start = base - prefix.count
        start.copyMemory(from: source, byteCount: prefix.count)
        return UnsafeRawBufferPointer(start: start, count: prefix.count + end)
    }

    /// Forgets the contents, keeping the memory.
    func reset() { count = 0 }

    /// Forgets the last `count` bytes written.
    func drop(last count: Int) { self.count = max(0, self.count - count) }

    /// The bytes in `range` (offsets into what was written); valid until the next write.
    func bytes(_ range: Range<Int>) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: base + range.lowerBound, count: range.count)
    }

    @inline(__always)
    func append(_ bytes: UnsafeRawBufferPointer) {
        guard let source = bytes.baseAddress, !bytes.isEmpty else { return }
        reserve(bytes.count)
        (base + count).copyMemory(from: source, byteCount: bytes.count)
        count += bytes.count
    }

    @inline(__always)
    func append(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { append($0) }
    }

    @inline(__always)
    func append(_ text: StaticString) {
        append(UnsafeRawBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    /// Appends a non-negative decimal integer (sequence numbers, counts).
    func appendDecimal(_ value: Int) {
        reserve(20)
        let magnitude = value.magnitude
        let length = DecimalDigits.count(magnitude)
        DecimalDigits.write(magnitude, endingAt: (base + count + length).assumingMemoryBound(to: UInt8.self))
        count += length
    }

    /// Makes room for `extra` more bytes; the common case is one compare, inlined.
    @inline(__always)
    private func reserve(_ extra: Int) {
        if count + extra > capacity { grow(toFit: extra) }
    }

    @inline(never)
    private func grow(toFit extra: Int) {
        let grown = max(capacity * 2, count + extra)
        let fresh = UnsafeMutableRawPointer.allocate(byteCount: Self.headroom + grown, alignment: 16) + Self.headroom
        fresh.copyMemory(from: base, byteCount: count)
        (base - Self.headroom).deallocate()
        base = fresh
        capacity = grown
    }

    /// Appends a sequence number (non-negative), reusing the text of the last one written.
    ///
    /// All 24 bytes of `seqWords` are stored (room was reserved): the bytes past the digits
    /// are beyond `count`, so the next write covers them.
    func appendSeq(_ value: Int) {
        guard value >= 0 else { return appendDecimal(value) }
        if value != seqValue {
            if value != seqValue &+ 1 || seqValue < 0 || !incrementSeqDigits() { formatSeqDigits(value) }
            seqValue = value
        }
        reserve(Self.seqWidth)
        let to = base + count
        to.storeBytes(of: seqWords.0.littleEndian, as: UInt64.self)
        to.storeBytes(of: seqWords.1.littleEndian, toByteOffset: 8, as: UInt64.self)
        to.storeBytes(of: seqWords.2.littleEndian, toByteOffset: 16, as: UInt64.self)
        count += seqCount
    }

    /// Adds one to the decimal text in `seqWords`, in its word.
    /// - Returns: false when the last digit is a 9 (a carry: the caller formats afresh, one
    ///   publish in ten).
    @inline(__always)
    private func incrementSeqDigits() -> Bool {
        let last = seqCount - 1
        let shift = UInt64((last & 7) * 8)
        let one = UInt64(1) << shift
        let nine = UInt64(UInt8(ascii: "9")) << shift
        let mask = UInt64(0xFF) << shift
        switch last >> 3 {
        case 0:
            guard seqWords.0 & mask != nine else { return false }
            seqWords.0 &+= one
        case 1:
            guard seqWords.1 & mask != nine else { return false }
            seqWords.1 &+= one
        default:
            guard seqWords.2 & mask != nine else { return false }
            seqWords.2 &+= one
        }
        return true
    }

    /// Writes `value`'s decimal text at the start of `seqWords`.
    @inline(never)
    private func formatSeqDigits(_ value: Int) {
        let magnitude = value.magnitude
        let digits = DecimalDigits.count(magnitude)
        seqCount = digits
        var words: (UInt64, UInt64, UInt64) = (0, 0, 0)
        withUnsafeMutableBytes(of: &words) { raw in
            guard let start = raw.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return }
            DecimalDigits.write(magnitude, endingAt: start + digits)
        }
        seqWords = (UInt64(littleEndian: words.0), UInt64(littleEndian: words.1), UInt64(littleEndian: words.2))
    }
}
