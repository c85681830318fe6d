/// A point in a session's outbound queue that may not be written yet: the `ok` of a state
/// op whose record is not durable, and everything queued after it.
struct OutputBarrier {
    /// Offset in `outbound` where the held bytes begin.
    var offset: Int
    /// The log position of the record that must be durable first.
    var position: Int
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

    /// Drops the barriers whose records are durable.
    /// - Parameter durable: the highest durable log position.
    /// - Returns: whether the first barrier moved (so more bytes may be written).
    func releaseBarriers(upTo durable: Int) -> Bool {
        var released = 0
        while released < barriers.count && barriers[released].position <= durable { released += 1 }
        guard released > 0 else { return false }
        barriers.removeFirst(released)
        return true
    }
}
