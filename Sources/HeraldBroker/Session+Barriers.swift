/// A point in a session's outbound queue that may not be written yet: the `ok` of a state
/// op whose record is not durable, or (cluster mode) of a `sub` whose new interest not every
/// node has seen, and everything queued after it.
struct OutputBarrier {
    /// Offset in `outbound` where the held bytes begin.
    var offset: Int
    /// The log position of the record that must be durable first (0: none).
    var position: Int
    /// The interest ticket every node must have acknowledged first (0: none).
    var ticket: Int = 0
}

extension Session {
    /// Whether the server has bytes it may write now: queued and not behind a barrier.
    public var hasWritableOutput: Bool {
        guard let first = barriers.first else { return !outbound.isEmpty }
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
    func holdOutput(until position: Int) {
        barriers.append(OutputBarrier(offset: outbound.count, position: position))
    }

    /// Holds everything queued from now on until every node acknowledged interest `ticket`.
    func holdOutput(untilTicket ticket: Int) {
        barriers.append(OutputBarrier(offset: outbound.count, position: 0, ticket: ticket))
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
