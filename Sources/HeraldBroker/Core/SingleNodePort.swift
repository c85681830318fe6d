import HeraldWire

/// The port of a node alone (`ClusterPort`): every op is done here, by the broker's local
/// functions. Holds nothing.
final class SingleNodePort: ClusterPort {
    /// No node name: `info` and `stats` carry no `node`.
    var node: String? { nil }
    /// Ids need no node bits.
    var idBase: Int { 0 }
    /// No other node acknowledges anything: no answer waits for one.
    var ticketsDone: Int { Int.max }

    /// Publishes here.
    func publish(_ broker: Broker, from session: Session) throws(HeraldError) {
        try broker.publishLocally(from: session)
    }

    /// Fans the request out here.
    func request(_ broker: Broker, from session: Session, now: Int, timeoutMs: Int) throws(HeraldError) {
        try broker.requestLocally(from: session, now: now, timeoutMs: timeoutMs)
    }

    /// Answers a request of this node.
    func reply(_ broker: Broker, from session: Session) throws(HeraldError) {
        try broker.replyLocally(from: session)
    }

    /// Fans the `$sys` events out here.
    func publishSystemEvents(_ broker: Broker) {
        broker.publishSystemEventsLocally()
    }

    /// Nobody else needs to know.
    func subscribed(_ broker: Broker, _ subscription: Subscription) {}

    /// Nobody else needs to know.
    func unsubscribed(_ broker: Broker, _ subscription: Subscription) {}

    /// Answers at once and serves the catch-up from this node's state and history.
    func answerSubscribe(_ broker: Broker, _ subscription: Subscription, catchUp: CatchUp) {
        broker.answerSubscribeLocally(subscription, catchUp: catchUp)
    }

    /// Judges `since` against this node's history.
    func judgeRecovery(_ broker: Broker, _ catchUp: CatchUp, on pattern: [UInt8]) -> CatchUp {
        broker.judgeRecoveryLocally(catchUp, on: pattern)
    }

    /// Reads or changes this node's retained state.
    func performStateOp(_ broker: Broker, _ op: Op, for session: Session) throws(HeraldError) {
        try broker.performStateOpLocally(op, for: session)
    }

    /// This node's handlers of the level.
    func signalCandidates(_ broker: Broker, matching level: [UInt8]) -> [SignalCandidate] {
        broker.handlers(matching: level).map { .local($0) }
    }

    /// Nobody else needs to know.
    func locksChanged(_ broker: Broker, _ changed: [Lock], added: Bool, by session: Session) {}

    /// Answers with this node's covered subscriptions.
    func answerLock(_ broker: Broker, _ session: Session, _ op: Op, pattern: [UInt8]?,
                    covered: [[UInt8]], truncated: Bool, released: Int) {
        broker.answerLock(session, op, pattern: pattern, covered: covered, truncated: truncated, released: released)
    }

    /// Answers with this node's lists.
    func answerLocks(_ broker: Broker, _ session: Session, on name: [UInt8]) {
        broker.answerLocks(session, name, lists: broker.lockLists(of: name, for: session.user))
    }

    /// Nobody else needs to know.
    func locksReleased(_ broker: Broker, ownedBy owner: ConnectionID) {}

    /// Nobody else needs to know.
    func locksRevoked(_ broker: Broker, _ revoked: [Lock], owner: ConnectionID) {}

    /// Sets the link here and answers.
    func link(_ broker: Broker, _ channel: [UInt8], to parent: [UInt8], for session: Session) {
        broker.linkLocally(channel, to: parent, for: session)
    }

    /// Drops the link here and answers.
    func unlink(_ broker: Broker, _ channel: [UInt8], for session: Session) {
        broker.unlinkLocally(channel, for: session)
    }

    /// Nobody else needs to know.
    func linksDropped(_ broker: Broker, _ channels: [[UInt8]], owner: ConnectionID) {}

    /// Writes it at once.
    func answerInTurn(_ broker: Broker, _ session: Session, _ build: (inout [UInt8]) -> Void) {
        broker.write(session, build)
    }

    /// No other node delivers requests here.
    func revokeDeliveredRequestRights(_ broker: Broker) {}

    /// Never scheduled alone.
    func deadlinePassed(_ broker: Broker, _ kind: DeadlineKind, id: Int) {}

    /// Every signal is this node's.
    func remoteOffer(_ broker: Broker, _ number: Int?, to session: Session) -> RemoteOffer? { nil }

    /// Never reached alone (no remote offer exists).
    func answerRemoteOffer(_ broker: Broker, _ offer: RemoteOffer, by session: Session, _ verdict: ClusterSignalMessage.Verdict) {}

    /// Never reached alone (no remote offer exists).
    func relayCallback(_ broker: Broker, _ offer: RemoteOffer, from session: Session) throws(HeraldError) {}

    /// Never reached alone (every candidate is local).
    func offerRemotely(_ broker: Broker, _ pending: PendingSignal, to handler: ClusterHandler, level: [UInt8], now: Int) {}

    /// No other node's offers are held here.
    func passRemoteOffers(_ broker: Broker, of session: Session) {}

    /// No other node was offered it.
    func withdrawRemoteOffers(_ broker: Broker, of pending: PendingSignal) {}

    /// No other node's offers are held here.
    func revokeRemoteOffers(_ broker: Broker) {}

    /// Records the owner and answers.
    func claim(_ broker: Broker, _ name: [UInt8], for session: Session) {
        broker.acceptDeclaration(of: name, by: session)
    }

    /// Ends the channel's exact subscriptions here.
    func removeInstanceChannel(_ broker: Broker, _ name: [UInt8], owner: ConnectionID?, reason: Broker.RemovalReason) {
        broker.dropExactSubscriptions(of: name)
    }
}
