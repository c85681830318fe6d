import HeraldWire

/// Half-close: the peer shut its sending side (`nc -q1` at the end of its input, a script's
/// `shutdown(SHUT_WR)`, a TLS close_notify) but still reads.
///
/// Every request already read is finished and answered before the connection closes: answers
/// held until the data folder made their write durable, `req`s waiting for a reply or their
/// timeout, `signal`s waiting to be handled or to run out of handlers. What the connection
/// only listened for ends at once, the way redis and nats-server treat a client that is done
/// sending: its subscriptions (and with them queue-group shares, signal handling and the
/// requests it would have been offered) are removed, and offers it holds count as `pass`,
/// since it can never answer them. What it owns for others (locks, instance channels, links)
/// stays until it closes, as for any connection. Heartbeats leave it alone (it cannot
/// answer a ping); every wait is bounded by its own deadline, and `max_pending` and the
/// close grace apply as always.
extension Broker {
    /// The peer will send nothing more: answer what it asked for, then close.
    ///
    /// Closes at once (after the queued bytes) when nothing is outstanding; otherwise the
    /// last answer closes it (`closeIfDrained`). A second call, or one for a closing
    /// connection, does nothing.
    /// - Parameters:
    ///   - session: the connection whose input ended.
    ///   - now: the monotonic clock in ms.
    public func endOfInput(_ session: Session, now: Int) {
        guard !session.inputEnded, !session.closeAfterFlush, !session.isDisconnected else { return }
        lastNow = max(lastNow, now)
        session.inputEnded = true
        session.isEnding = true
        removeAllSubscriptions(of: session)
        passHeldOffers(of: session, now: now)
        closeIfDrained(session)
        flushSystemEvents()
    }

    /// Whether a half-closed connection still waits for something it asked for: a held
    /// durability answer, a request's reply or timeout, a signal's outcome, a cluster receipt.
    /// - Parameter session: the connection.
    /// - Returns: true while any of its answers is still to come.
    func isAwaitingAnswers(_ session: Session) -> Bool {
        !session.barriers.isEmpty || session.signalsInFlight > 0 || requests.hasRequests(of: session.id)
            || session.clusterReceipts > 0
    }

    /// Asks a half-closed connection to close once its last answer is written, when nothing
    /// it asked for is outstanding any more. Called wherever an answer ends a wait.
    /// - Parameter session: the connection that was just answered.
    func closeIfDrained(_ session: Session) {
        guard session.inputEnded, !session.closeAfterFlush, !session.isDisconnected else { return }
        guard !isAwaitingAnswers(session) else { return }
        close(session, now: lastNow)
    }
}
