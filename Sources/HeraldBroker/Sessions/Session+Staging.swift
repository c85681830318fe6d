extension Session {
    /// Size of a session's `hot` block, allocated on its first small event.
    static let hotCapacity = 1024
    /// Largest frame staged through `hot` for a session whose blocks the server does not take
    /// (`takesStagedBlocks` false); longer ones are appended to the queue directly.
    static let stagedFrameLimit = 512
    /// Largest frame staged through `hot` for a session whose blocks the server takes;
    /// longer ones are copied into the staging block directly.
    ///
    /// Why not every frame straight into the block: at 1→1000 16 B the daemon writes tens of
    /// megabytes of frames into a thousand blocks per pass, and 50-byte copies into cold
    /// lines each paid a read for ownership: `memmove` rose from 15% to 39% of the cycles
    /// and the rate fell by a fifth (`perf`, docs/benchmarks.md, eighth session). Small
    /// frames gather in the hot 1 KiB block and move on in one long copy; frames of a few
    /// lines or more are written once.
    static let hotFrameLimitWithBlocks = 128

    /// Appends one event frame: a small one to the `hot` block, a larger one to the staging
    /// block (or, without `takesStagedBlocks`, to the queue).
    ///
    /// Why: `Array.append(contentsOf:)` costs about 85 instructions of bookkeeping per call
    /// (uniqueness, capacity, the generic copy's remainder check), a quarter of a delivery at
    /// 1→100. A frame is copied with a bounds check and a `memcpy` instead. For a plain
    /// connection the server writes the staging block as it is when nothing else is queued
    /// (`takeStaged`: a larger frame is copied once on its way from the shared parts to the
    /// socket); otherwise the staged frames move into the queue when anything reads or writes
    /// `outbound` (every other writer, and the server's `takeOutbound`, go through it, so
    /// frames keep their order). `pendingBytes` counts staged bytes, so `max_pending` sees
    /// them at once; callers check it before they append, which bounds the staging block
    /// (docs/architecture.md, "The data path of one `pub`" and "one copy per event frame").
    /// - Parameters:
    ///   - first: the frame, or its first part.
    ///   - second: the rest of the frame (a compact frame leaves a piece out), or nothing.
    @inline(__always)
    func appendEvent(_ first: UnsafeRawBufferPointer,
                     _ second: UnsafeRawBufferPointer = UnsafeRawBufferPointer(start: nil, count: 0)) {
        let total = first.count + second.count
        if total <= hotFrameLimit {
            if hotCount + total <= Session.hotCapacity, let block = hot {
                if let source = first.baseAddress { (block + hotCount).copyMemory(from: source, byteCount: first.count) }
                if let rest = second.baseAddress {
                    (block + hotCount + first.count).copyMemory(from: rest, byteCount: second.count)
                }
                hotCount += total
                return
            }
        } else if hotCount == 0 && staging.appendIfRoom(first, second) {
            return
        }
        appendEventSlowly(first, second)
    }

    /// `appendEvent` when the frame does not fit where it goes: spills the full `hot` block,
    /// grows the staging block, or appends a large frame to the queue.
    @inline(never)
    private func appendEventSlowly(_ first: UnsafeRawBufferPointer, _ second: UnsafeRawBufferPointer) {
        let total = first.count + second.count
        if total <= hotFrameLimit {
            if hot == nil { hot = UnsafeMutableRawPointer.allocate(byteCount: Session.hotCapacity, alignment: 16) }
            spillHot()
            return appendEvent(first, second)
        }
        guard takesStagedBlocks else {
            moveStaged()
            reserveOutbound(total, limit: outboundLimit - inFlight)
            queued.appendRaw(first)
            queued.appendRaw(second)
            return
        }
        spillHot()
        appendToStaging(first, second)
    }

    /// Appends to the staging block, growing it (bounded by `max_pending`).
    private func appendToStaging(_ first: UnsafeRawBufferPointer, _ second: UnsafeRawBufferPointer) {
        if staging.appendIfRoom(first, second) { return }
        staging.grow(toFit: first.count + second.count, limit: outboundLimit - inFlight)
        if !staging.appendIfRoom(first, second) {
            // The allocation failed: the queue takes it (and traps as any allocation would).
            moveStaged()
            queued.appendRaw(first)
            queued.appendRaw(second)
        }
    }

    /// Moves the `hot` block's frames behind the staging block's (or, without
    /// `takesStagedBlocks`, behind the queue's) in one copy.
    private func spillHot() {
        guard hotCount > 0, let block = hot else { return }
        let bytes = UnsafeRawBufferPointer(start: block, count: hotCount)
        hotCount = 0
        if takesStagedBlocks {
            appendToStaging(bytes, UnsafeRawBufferPointer(start: nil, count: 0))
        } else {
            reserveOutbound(bytes.count, limit: outboundLimit - inFlight)
            queued.appendRaw(bytes)
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
        if let block = hot { queued.appendRaw(UnsafeRawBufferPointer(start: block, count: hotCount)) }
        hotCount = 0
    }

    /// Drops every frame not yet handed to the socket, staged or queued, and frees the
    /// staging block and the queue (a slow consumer cut off: what it held must not stay
    /// pinned).
    func discardOutbound() {
        staging.release()
        hotCount = 0
        queued = []
    }

    /// Hands the staged frames over without copying the staging block, when they are all
    /// the session has to send: the `hot` block's frames are spilled into it first, and
    /// `block` (written and emptied by the caller) becomes the new staging block.
    /// - Returns: false, changing nothing, for a session that does not take blocks, when
    ///   something else is queued, a barrier holds the output, or nothing is staged; then
    ///   `takeOutbound` is the way.
    public func takeStaged(swappingWith block: inout OutputBlock) -> Bool {
        guard takesStagedBlocks, stagedCount > 0, queued.isEmpty, barriers.isEmpty, block.isEmpty else { return false }
        spillHot()
        swap(&staging, &block)
        return true
    }
}
