extension Session {
    /// Up to this capacity `outbound` grows by doubling; past it, straight to its limit.
    static let outboundDoublingLimit = 1 << 20

    /// Makes room in `outbound` for `size` more bytes, never growing its capacity past `limit`.
    ///
    /// Why (found by `scripts/fault nonreader`): `Array` grows by doubling, copying the old
    /// bytes, so a queue filling up toward `max_pending` passed through buffers of 1, 2, 4 …
    /// MiB up to about 1.4 × `max_pending` (Swift's capacities are not powers of two), held the
    /// old and the new copy at once while growing, and left the freed smaller buffers in the
    /// allocator's heap: a subscriber that never reads cost the daemon about 1.5 × `max_pending`
    /// of RSS. Past 1 MiB the queue is instead reserved once at its limit (pages are touched
    /// only as bytes arrive, so a lagging peer costs what it holds) and never copied again:
    /// at most `max_pending` plus the 1 MiB copied at that step. Below 1 MiB nothing changes.
    /// Off the hot path: one comparison with the capacity per frame.
    /// - Parameters:
    ///   - size: bytes about to be appended.
    ///   - limit: the most `outbound` may legitimately hold (`max_pending` minus the bytes in flight).
    @inline(__always)
    func reserveOutbound(_ size: Int, limit: Int) {
        let needed = queued.count + size
        if needed > queued.capacity { growOutbound(to: needed, limit: limit) }
    }

    /// The slow part of `reserveOutbound`: doubles up to 1 MiB, then jumps to `limit` (never below `needed`).
    @inline(never)
    private func growOutbound(to needed: Int, limit: Int) {
        let doubled = Swift.max(queued.capacity * 2, 256)
        let target = doubled <= Session.outboundDoublingLimit ? doubled : limit
        queued.reserveCapacity(Swift.max(needed, Swift.min(target, limit)))
    }
}
