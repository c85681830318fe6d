extension Session {
    /// Size of a session's staging block, allocated on its first small event.
    static let stagingCapacity = 1024
    /// Largest frame staged; longer ones are appended to the queue directly.
    static let stagedFrameLimit = 512

    /// Appends one event frame to the queue, through the staging block when it is small.
    ///
    /// Why: `Array.append(contentsOf:)` costs about 85 instructions of bookkeeping per call
    /// (uniqueness, capacity, the generic copy's remainder check), a quarter of a delivery at
    /// 1→100. A small frame is copied into the session's fixed block instead (a bounds check
    /// and a `memcpy`), and the block moves into the queue in one append when it is full or
    /// when anything reads or writes `outbound` (every other writer, and the server's
    /// `takeOutbound`, go through it, so frames keep their order). `pendingBytes` counts
    /// staged bytes, so `max_pending` sees them at once. Costs 1 KiB per session that ever
    /// received a small event (docs/architecture.md, "The data path of one `pub`").
    /// - Parameters:
    ///   - first: the frame, or its first part.
    ///   - second: the rest of the frame (a compact frame leaves a piece out), or nothing.
    @inline(__always)
    func appendEvent(_ first: UnsafeRawBufferPointer,
                     _ second: UnsafeRawBufferPointer = UnsafeRawBufferPointer(start: nil, count: 0)) {
        let end = stagedCount + first.count + second.count
        guard end <= Session.stagingCapacity, spanBytes == 0, let block = staging else { return appendEventSlowly(first, second) }
        if let source = first.baseAddress { (block + stagedCount).copyMemory(from: source, byteCount: first.count) }
        if let rest = second.baseAddress {
            (block + stagedCount + first.count).copyMemory(from: rest, byteCount: second.count)
        }
        stagedCount = end
    }

    /// `appendEvent` when the frame does not fit the block's free space: moves the block in,
    /// then stages the frame in the emptied block, or appends it when it is large.
    @inline(never)
    private func appendEventSlowly(_ first: UnsafeRawBufferPointer, _ second: UnsafeRawBufferPointer) {
        if spanBytes > 0 { materializeSpans() }
        if stagedCount > 0 { moveStaged() }
        let total = first.count + second.count
        guard total <= Session.stagedFrameLimit else {
            reserveOutbound(total, limit: outboundLimit - inFlight)
            queued.appendRaw(first)
            queued.appendRaw(second)
            return
        }
        if staging == nil {
            staging = UnsafeMutableRawPointer.allocate(byteCount: Session.stagingCapacity, alignment: 16)
        }
        appendEvent(first, second)
    }

    /// Moves the staged frames to the end of `queued`, growing it the way deliveries do
    /// (`reserveOutbound`, bounded by `max_pending`).
    func moveStaged() {
        let count = stagedCount
        guard count > 0, let block = staging else { return }
        stagedCount = 0
        reserveOutbound(count, limit: outboundLimit - inFlight)
        queued.appendRaw(UnsafeRawBufferPointer(start: block, count: count))
    }
}
