extension Session {
    /// Queues a frame that sits in the broker's `FrameArena` by reference (`FrameArena`):
    /// merged into the last span when it follows it in the arena, which is the case for
    /// every event of a pass at 1→N with one prefix.
    ///
    /// Order: `queued`, then the staged block, then the spans. The staged block moves in
    /// first; any frame queued by copy later copies the spans in first (`materializeSpans`).
    ///
    /// The last span is kept apart (`openSpan`), so merging writes no array (an `Array`
    /// element write checks uniqueness), and the arena comes unretained: a retain and a
    /// release per delivery were a tenth of the daemon's cycles at 1→100 (`perf`).
    @inline(__always)
    func appendSpan(start: Int, count: Int, in arena: Unmanaged<FrameArena>) {
        if stagedCount > 0 { moveStaged() }
        let id = arena.toOpaque()
        if spanBytes > 0 {
            if arenaID != id {
                // A list points into one arena: one in another is copied in first.
                materializeSpans()
            } else if Int(openSpan.start) + Int(openSpan.count) == start {
                openSpan.count += Int32(count)
                spanBytes += count
                return
            } else {
                spans.append(openSpan)
                openSpan = FrameSpan(start: Int32(start), count: Int32(count))
                spanBytes += count
                return
            }
        }
        arena._withUnsafeGuaranteedRef { arena in
            arena.hold()
            if arenaID != id {
                self.arena = arena
                arenaID = id
            }
        }
        openSpan = FrameSpan(start: Int32(start), count: Int32(count))
        spanBytes = count
    }

    /// The spans queued, oldest first (the closed ones, then `openSpan`).
    var spanList: [FrameSpan] { spanBytes > 0 ? spans + [openSpan] : [] }

    /// Copies the spans' bytes to the end of `queued` and lets the arena go: anything that
    /// reads or writes the queue does this first, so frames keep their order.
    @inline(never)
    func materializeSpans() {
        guard spanBytes > 0, let arena else { return }
        reserveOutbound(spanBytes, limit: outboundLimit - inFlight)
        for span in spans { queued.appendRaw(arena.bytes(span)) }
        queued.appendRaw(arena.bytes(openSpan))
        spans.removeAll(keepingCapacity: true)
        spanBytes = 0
        arena.release()
    }

    /// Moves the spans onto the end of `target` (a hand-off box's list, written after what
    /// the box holds) when the session has nothing else queued. If `target` has spans, they
    /// must be in the same arena and the session's hold on it goes (the box holds it); if
    /// not, the hold moves with the spans and `arena` becomes theirs.
    /// - Returns: the bytes moved, or nil (nothing moved) when the session has other bytes
    ///   queued, a barrier, no spans, or spans in another arena than `target`'s.
    public func moveSpans(appendingTo target: inout [FrameSpan], arena: inout FrameArena?) -> Int? {
        guard spanBytes > 0, barriers.isEmpty, stagedCount == 0, queued.isEmpty, let own = self.arena else { return nil }
        let targetHolds = !target.isEmpty
        if targetHolds && own !== arena { return nil }
        for span in spans { Session.append(span, to: &target) }
        Session.append(openSpan, to: &target)
        spans.removeAll(keepingCapacity: true)
        let moved = spanBytes
        spanBytes = 0
        if targetHolds { own.release() } else { arena = own }
        return moved
    }

    /// Appends `span` to `list`, merged into the last one when it follows it.
    private static func append(_ span: FrameSpan, to list: inout [FrameSpan]) {
        if let last = list.last, Int(last.start) + Int(last.count) == Int(span.start) {
            list[list.count - 1].count += span.count
        } else {
            list.append(span)
        }
    }

    /// `materializeSpans` for the server: a connection that cannot write now (a write in
    /// flight, closing) copies its spans in, so the arena can start again next pass.
    public func keepSpansInQueue() {
        if spanBytes > 0 { materializeSpans() }
    }

    /// The arena its spans point into (a getter: the server's module checks exclusivity
    /// dynamically on stored properties of other modules' classes).
    public var frameArena: FrameArena? { arena }

    /// Hands the queued bytes to `spare` (`takeOutbound`) and the spans behind them to
    /// `spareSpans`, which the caller writes after the bytes and then releases
    /// (`FrameArena.release`, once, when `spareSpans` was empty and is not now).
    /// - Returns: the bytes of the spans taken.
    public func takeOutbound(into spare: inout [UInt8], spans spareSpans: inout [FrameSpan]) -> Int {
        spareSpans.removeAll(keepingCapacity: true)
        guard barriers.isEmpty, spanBytes > 0 else {
            takeOutbound(into: &spare)
            return 0
        }
        if stagedCount > 0 { moveStaged() }
        spare.removeAll(keepingCapacity: true)
        swap(&queued, &spare)
        spans.append(openSpan)
        swap(&spans, &spareSpans)
        let bytes = spanBytes
        spanBytes = 0
        return bytes
    }
}
