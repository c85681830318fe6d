/// After SIGHUP narrowed a user's rights: everything those rights covered ends too, not only
/// subscriptions (issue 12): locks, links, declared channels, reply tokens and held signal
/// offers. Each concern's part lives beside its own code; this is the one place that calls them.
extension Broker {
    /// Ends what `session`'s current user may no longer hold. Called by `applyAuthSettings`
    /// after the session took its user's new permissions.
    func revokeRights(of session: Session, now: Int) {
        revokeLocks(of: session)
        revokeLinks(of: session)
        revokeDeclarations(of: session)
    }

    /// Ends what rights no connection holds any more over things many connections share:
    /// reply tokens and held signal offers. Called once per reload, after every session took
    /// its new permissions, so it walks the pending requests and signals once, not once per
    /// connection.
    func revokeSharedRights(now: Int) {
        revokeReplyRights()
        revokeSignalOffers(now: now)
    }
}
