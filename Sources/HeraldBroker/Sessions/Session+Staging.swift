extension Session {
    /// Largest frame staged for a session whose blocks the server does not take
    /// (`takesStagedBlocks` false); longer ones are appended to the queue directly.
    static let stagedFrameLimit = 512

    /// Appends one event frame, through the staging block.
    ///
    /// Why: `Array.append(contentsOf:)` costs about 85 instructions of bookkeeping per call
    /// (uniqueness, capacity, the generic copy's remainder check), a quarter of a delivery at
    /// 1→100. A frame is copied into the session's `OutputBlock` instead (a bounds check and
    /// a `memcpy`). For a plain connection the server writes that block as it is when nothing
    /// else is queued (`takeStaged`: one copy per frame from the shared parts to the socket);
    /// otherwise the block moves into the queue when anything reads or writes `outbound`
    /// (every other writer, and the server's `takeOutbound`, go through it, so frames keep
    /// their order). `pendingBytes` counts staged bytes, so `max_pending` sees them at once;
    /// callers check it before they append, which bounds the block (docs/architecture.md,
    /// "The data path of one `pub`" and "one copy per event frame").
    /// - Parameters:
    ///   - first: the frame, or its first part.
    ///   - second: the rest of the frame (a compact frame leaves a piece out), or nothing.
    @inline(__always)
    func appendEvent(_ first: UnsafeRawBufferPointer,
                     _ second: UnsafeRawBufferPointer = UnsafeRawBufferPointer(start: nil, count: 0)) {
        if !staging.appendIfRoom(first, second) { appendEventSlowly(first, second) }
    }

    /// `appendEvent` when the frame does not fit the block's free space: grows the block (or,
    /// for a session whose blocks stay in the daemon, moves it in first), or appends a large
    /// frame to the queue directly.
    @inline(never)
    private func appendEventSlowly(_ first: UnsafeRawBufferPointer, _ second: UnsafeRawBufferPointer) {
        let total = first.count + second.count
        if !takesStagedBlocks {
            if stagedCount > 0 { moveStaged() }
            guard total <= Session.stagedFrameLimit else {
                reserveOutbound(total, limit: outboundLimit - inFlight)
                queued.appendRaw(first)
                queued.appendRaw(second)
                return
            }
        }
        staging.grow(toFit: total, limit: outboundLimit - inFlight)
        if !staging.appendIfRoom(first, second) {
            // The allocation failed: the queue takes it (and traps as any allocation would).
            moveStaged()
            queued.appendRaw(first)
            queued.appendRaw(second)
        }
    }

    /// Moves the staged frames to the end of `queued`, growing it the way deliveries do
    /// (`reserveOutbound`, bounded by `max_pending`).
    func moveStaged() {
        let count = stagedCount
        guard count > 0 else { return }
        reserveOutbound(count, limit: outboundLimit - inFlight)
        queued.appendRaw(staging.bytes)
        staging.removeAll()
    }

    /// Drops every frame not yet handed to the socket, staged or queued, and frees both
    /// buffers (a slow consumer cut off: what it held must not stay pinned).
    func discardOutbound() {
        staging.release()
        queued = []
    }

    /// Hands the staged frames over without copying them, when they are all the session has
    /// to send: `block` (written and emptied by the caller) becomes the staging block.
    /// - Returns: false, changing nothing, for a session that does not take blocks, when
    ///   something else is queued, a barrier holds the output, or nothing is staged; then
    ///   `takeOutbound` is the way.
    public func takeStaged(swappingWith block: inout OutputBlock) -> Bool {
        guard takesStagedBlocks, stagedCount > 0, queued.isEmpty, barriers.isEmpty, block.isEmpty else { return false }
        swap(&staging, &block)
        return true
    }
}
