import HeraldWire

extension Broker {
    /// Advances time: pings silent peers, closes dead ones, and gives up on closing
    /// connections whose peer stopped reading.
    ///
    /// A peer silent for `heartbeat_ms` gets `{"ping":MS}`; one silent for two more
    /// intervals is closed with a `timeout` error. The server calls this from one timer.
    /// - Parameters:
    ///   - now: the monotonic clock in ms.
    ///   - closeGraceMs: how long a requested close may wait for its bytes to drain.
    /// - Returns: sessions the server should close now, flushed or not.
    public func tick(now: Int, closeGraceMs: Int = 2_000, isOverBudget: () -> Bool = { false }) -> [Session] {
        fireDeadlines(now: now)
        expireHeldAnswers(now: now)
        tickPresence(now: now)
        dedup.expire(now: now)
        var overdue: [Session] = []
        let interval = config.heartbeatMs
        for session in sessions.values {
            if session.closeAfterFlush {
                if now - session.closeRequestedAt >= closeGraceMs { overdue.append(session) }
                continue
            }
            // A half-closed peer cannot answer a ping: its drain is bounded by the deadlines
            // of what it asked for, not by heartbeats (`Broker+HalfClose`). Nor can one the
            // server stopped reading (`isReadPaused`): its answer would sit in the socket.
            guard interval > 0, !session.inputEnded, !session.isReadPaused else { continue }
            let silent = now - session.lastHeard
            if silent >= 3 * interval {
                fail(session, HeraldError(.timeout, "no traffic for " + String(silent) + " ms; closing"), now: now)
                close(session, now: now)
            } else if silent >= interval && !session.pingOutstanding {
                session.pingOutstanding = true
                let clock = wallClock()
                write(session) { out in
                    out.appendRaw(#"{"ping":"#)
                    out.appendInt(clock)
                    out.appendRaw("}\n")
                }
            }
        }
        enforcePendingPerUser()
        giveBackIdleLeases(now: now)
        shareRatesIfDue(now: now)
        recountPending()
        sweepTombstones(isOverBudget: isOverBudget)
        sweepChannelRecords(isOverBudget: isOverBudget)
        flushSystemEvents()
        return overdue
    }

    /// Tells every client the daemon is stopping and asks for every connection to close.
    public func shutdown(now: Int) {
        endHeldAnswersForShutdown()
        for session in sessions.values where !session.closeAfterFlush {
            write(session) { out in
                out.appendRaw(#"{"error":"shutting_down","message":"heraldd is stopping"}"#)
                out.append(UInt8(ascii: "\n"))
            }
            close(session, now: now)
        }
        flushSystemEvents()
    }
}
