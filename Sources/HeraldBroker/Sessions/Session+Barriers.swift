/// A point in a session's outbound queue that may not be written yet: the `ok` of a state
/// op whose record is not durable, or (cluster mode) of a `sub` whose new interest not every
/// node has seen, and everything queued after it.
struct OutputBarrier {
    /// Offset in `outbound` where the held bytes begin.
    var offset: Int
    /// The log position of the record that must be durable first (0: none).
    var position: Int
    /// When the answer gives up waiting (monotonic ms): `disk_full_timeout_ms` after the op.
    var deadline: Int
    /// The interest ticket every node must have acknowledged first (0: none).
    var ticket: Int = 0
}

extension Session {
    /// Whether the server has bytes it may write now: queued and not behind a barrier.
    public var hasWritableOutput: Bool {
        guard let first = barriers.first else { return !hasNoOutbound }
        return first.offset > 0
    }

    /// Moves the bytes before the first barrier into `spare` and shifts the barriers.
    ///
    /// Only taken while acknowledgements are held (persistence on), so the copy of the
    /// remainder is not on the plain publish path.
    /// - Parameter spare: an empty buffer that receives the releasable bytes.
    func takeReleasable(into spare: inout [UInt8]) {
        guard let first = barriers.first, first.offset > 0 else { return }
        let cut = min(first.offset, outbound.count)
        spare.append(contentsOf: outbound[0..<cut])
        outbound.removeFirst(cut)
        for k in barriers.indices { barriers[k].offset -= cut }
    }

    /// Holds everything queued from now on until `position` is durable.
    /// - Parameters:
    ///   - position: the log position of the op's record.
    ///   - deadline: when the held `ok` turns into an error instead (`failBarriers`).
    func holdOutput(until position: Int, deadline: Int) {
        barriers.append(OutputBarrier(offset: outbound.count, position: position, deadline: deadline))
    }

    /// Holds everything queued from now on until every node acknowledged interest `ticket`.
    func holdOutput(untilTicket ticket: Int) {
        barriers.append(OutputBarrier(offset: outbound.count, position: 0, deadline: Int.max, ticket: ticket))
    }

    /// Drops the leading barriers whose records are durable and whose tickets are done.
    /// - Parameters:
    ///   - durable: the highest durable log position.
    ///   - ticketsDone: the highest interest ticket every node acknowledged.
    /// - Returns: whether the first barrier moved (so more bytes may be written).
    func releaseBarriers(upTo durable: Int, ticketsDone: Int = Int.max) -> Bool {
        var released = 0
        while released < barriers.count && barriers[released].position <= durable
                && barriers[released].ticket <= ticketsDone { released += 1 }
        guard released > 0 else { return false }
        barriers.removeFirst(released)
        return true
    }
}

extension Session {
    /// The start every held answer has: `acknowledge` holds right before queuing `{"ok":…`.
    private static let okOpening = Array(#"{"ok":"#.utf8)

    /// Turns held `ok` answers into errors and releases them: the front barriers whose
    /// deadline is at or before `now` (all of them for `Int.max`).
    ///
    /// The answer is rewritten in place, `{"ok":"set",…` becoming `opening` + `"set",…`, so
    /// the error keeps the op, the `rid` and the `rev` the change has in memory, and no
    /// barrier needs to keep a copy of anything to build it.
    /// - Parameters:
    ///   - now: the monotonic clock in ms.
    ///   - opening: `{"error":CODE,"message":M,"op":`.
    /// - Returns: whether any answer was released.
    func failBarriers(dueBy now: Int, opening: [UInt8]) -> Bool {
        var failed = 0
        while failed < barriers.count && barriers[failed].deadline <= now { failed += 1 }
        guard failed > 0 else { return false }
        var shift = 0
        for k in 0..<failed { shift += rewriteAnswer(at: barriers[k].offset + shift, opening: opening) }
        barriers.removeFirst(failed)
        for k in barriers.indices { barriers[k].offset += shift }
        return true
    }

    /// Replaces the `{"ok":` at `offset` with `opening`.
    /// - Returns: how many bytes the queue grew by (0 when no `ok` starts there).
    private func rewriteAnswer(at offset: Int, opening: [UInt8]) -> Int {
        let end = offset + Self.okOpening.count
        guard end <= outbound.count, outbound[offset..<end].elementsEqual(Self.okOpening) else { return 0 }
        outbound.replaceSubrange(offset..<end, with: opening)
        return opening.count - Self.okOpening.count
    }
}
