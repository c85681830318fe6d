import CLibUV
import HeraldBroker

/// Cluster backpressure, a connection's side (docs/cluster.md, "Backpressure and the control
/// link"): while the node has more cluster work outstanding than `max_outstanding_ops` /
/// `max_outstanding_bytes` allow, the connections that queued some stop being read, the way
/// a held `hello` or a half-close stops reading: the peer's bytes wait in the socket and TCP
/// slows the peer down. Nothing is refused or dropped. Lines already read go on being handled
/// (a yielded connection still frames what it holds); only new reads wait. The worker
/// resumes them when the engine says the outstanding amount fell to half.
extension Connection {
    /// Under the broker lock, after framing: these lines queued cluster work; the worker
    /// lists the connection (once per pass) to pause it if the pass ends congested.
    func queuedClusterWork() {
        let pass = worker.pass
        guard clusterWorkPass != pass else { return }
        clusterWorkPass = pass
        worker.clusterWriters.append(self)
    }

    /// Under the broker lock: marks the connection paused (its silence is then no heartbeat
    /// timeout). `stopReadingForBackpressure` stops the reads, outside the lock.
    /// - Returns: whether it was not paused already (and is not closing).
    func pauseForBackpressure() -> Bool {
        guard !isBackpressured, !isClosing else { return false }
        isBackpressured = true
        session.isReadPaused = true
        return true
    }

    /// Stops reading after `pauseForBackpressure`.
    func stopReadingForBackpressure() {
        guard !isClosing else { return }
        uv_read_stop(stream)
    }

    /// Under the broker lock: ends the pause; the silence clock starts again now, since
    /// nothing was read meanwhile.
    /// - Returns: whether reading should start again now: not when lines are held (their
    ///   framing restarts reading when they are done), the input ended, or a close is on.
    func endPause(_ broker: Broker, now: Int) -> Bool {
        guard isBackpressured else { return false }
        isBackpressured = false
        session.isReadPaused = false
        broker.heard(from: session, now: now)
        return !isClosing && !isHolding && !inputHasEnded && !session.closeAfterFlush
    }
}
