/// After SIGHUP narrowed a user's rights: everything those rights covered ends too, not only
/// subscriptions (issue 12): locks, links, declared channels, reply tokens and held signal
/// offers. Each concern's part lives beside its own code; this is the one place that calls them.
extension Broker {
    /// Ends what `session`'s current user may no longer hold. Called by `applyAuthSettings`
    /// after the session took its user's new permissions.
    func revokeRights(of session: Session, now: Int) {
        revokeReplyRights(of: session)
        revokeSignalOffers(of: session, now: now)
    }
}
