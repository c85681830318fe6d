import HeraldWire

/// What happens when a connection goes: everything it owned besides its subscriptions.
extension Broker {
    /// Releases what a departing connection owns: its locks, instance channels and
    /// requests in flight (with their deadlines).
    ///
    /// Called both when the broker asks for a close (interest ends at once, not when the
    /// socket finally closes) and on disconnect; `hasLeft` makes the second call a no-op.
    func leave(_ session: Session) {
        guard !session.hasLeft else { return }
        session.hasLeft = true
        releaseLocks(of: session)
        removeOwnedChannels(of: session)
        cancelRequests(of: session)
        releaseLinks(of: session)
        releaseSignals(of: session, now: lastNow)
        deadlines.cancel(kind: .auth, id: session.id)
        auth.unauthenticated.remove(session.id)
        releaseConnection(of: session)
        queueClientEvent(session, connected: false)
    }
}

extension Broker {
    /// Channels clients used, leaving out the daemon's own `$…` channels, for `stats`.
    ///
    /// A counter, never a walk of the table: `stats` is cheap whatever the daemon holds.
    var clientChannelCount: Int {
        channels.count - reservedChannelCount
    }
}
