/// One event's frame in the `FrameArena`, for the targets of its fan-out that share a
/// prefix: the first of them writes it there, the others queue the same bytes by reference.
///
/// Lives for one `Broker.fanOut`; it remembers the last prefix written, which is every
/// target's when a channel's subscribers all use the same subscription name.
struct SharedFrame {
    /// `FastTarget.prefix.lowerBound` of the frame in the arena; -1 for none yet.
    private var prefixStart = -1
    private var arena: Unmanaged<FrameArena>?
    private var start = 0
    private var count = 0

    /// Where this event's frame for `target` sits in the broker's arena, writing it there
    /// first unless the last target's prefix was the same.
    /// - Returns: nil when the arena is full (the caller copies as before).
    @inline(__always)
    mutating func span(for target: FastTarget, prefix: UnsafeRawBufferPointer,
                       in broker: Broker) -> (arena: Unmanaged<FrameArena>, start: Int, count: Int)? {
        if prefixStart != target.prefix.lowerBound {
            guard write(target, prefix: prefix, in: broker) else { return nil }
        }
        guard let arena else { return nil }
        return (arena, start, count)
    }

    /// Writes the frame for `target` (`prefix`, then the shared parts; without `from` when
    /// it is compact) into the arena.
    private mutating func write(_ target: FastTarget, prefix: UnsafeRawBufferPointer, in broker: Broker) -> Bool {
        let shared = broker.eventShared
        let empty = UnsafeRawBufferPointer(start: nil, count: 0)
        let head = target.isCompact ? shared.prefixed(prefix, upTo: broker.eventFromStart)
            : shared.prefixed(prefix, upTo: shared.count)
        guard let head else { return false }
        let tail = target.isCompact ? shared.bytes(broker.eventFromEnd..<shared.count) : empty
        guard let (into, at) = broker.frameArenas.append(head, tail) else { return false }
        prefixStart = target.prefix.lowerBound
        // The pool keeps every arena alive as long as the broker.
        arena = Unmanaged.passUnretained(into)
        start = at
        count = head.count + tail.count
        return true
    }
}
