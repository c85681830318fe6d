import CLibUV
import HeraldBroker

/// The edge of a half-close: the peer shut its sending side (EOF on a TCP or Unix socket, or
/// a TLS close_notify) but may still read.
///
/// Reading stops; lines already read but held (a parked `hello`, a spent line budget) are
/// still handed to the broker; then the broker is told (`Broker.endOfInput`), and it asks for
/// the close (`closeAfterFlush`) once every answer the peer is owed is queued. The flush
/// path then writes them and closes as for any requested close. A read error (a reset) or a
/// failed write still closes at once; after EOF the daemon no longer reads, so a peer that
/// vanishes is noticed by the next write, and every wait in between has its own deadline.
extension Connection {
    /// A negative read status: EOF starts the half-close, anything else closes now.
    /// - Parameter status: libuv's status for the read.
    func readEnded(_ status: Int) {
        guard status == Int(UV_EOF.rawValue) else {
            close(reason: Connection.endReason(status))
            return
        }
        endInput()
    }

    /// The peer will send nothing more: stop reading, and tell the broker once the lines
    /// held on this side are handed over (`proceed(.read)` does it then).
    func endInput() {
        guard !isClosing, !inputHasEnded else { return }
        inputHasEnded = true
        // The peer ending its own input is the reason it goes, whatever the last answer is
        // (a request's `timeout` error must not read as the daemon's verdict in the log).
        if closeReason == nil { closeReason = .peerClosed }
        uv_read_stop(stream)
        guard !isHolding else { return }
        handInputEnd()
    }

    /// Tells the broker the input ended; the flush pass of this loop iteration writes (and,
    /// when nothing is outstanding, closes).
    func handInputEnd() {
        let now = worker.now
        worker.shared.withLock { broker in broker.endOfInput(session, now: now) }
    }
}
