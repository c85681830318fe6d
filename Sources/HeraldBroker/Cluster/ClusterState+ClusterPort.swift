import HeraldWire

/// Cluster mode's port (`ClusterPort`): each op goes to the broker's cluster function for
/// it (`Broker+Cluster*.swift`), which queues the work for the engine and Redis.
extension ClusterState: ClusterPort {
    /// `cluster.node`.
    var node: String? { nodeName }
    /// The node's index in the high 32 bits.
    var idBase: Int { nodeIndex << 32 }

    /// Queues the event for Redis (`Broker+Cluster.swift`).
    func publish(_ broker: Broker, from session: Session) throws(HeraldError) {
        try broker.publishToCluster(self, from: session)
    }

    /// Queues the request for Redis (`Broker+ClusterRequests.swift`).
    func request(_ broker: Broker, from session: Session, now: Int, timeoutMs: Int) throws(HeraldError) {
        try broker.clusterRequest(self, from: session, now: now, timeoutMs: timeoutMs)
    }

    /// Sends the reply to the requester's node (`Broker+ClusterRequests.swift`).
    func reply(_ broker: Broker, from session: Session) throws(HeraldError) {
        try broker.clusterReply(self, from: session)
    }

    /// Queues the `$sys` events for Redis, each with this node's name.
    func publishSystemEvents(_ broker: Broker) {
        broker.publishSystemEventsToCluster(self)
    }

    /// Queues the interest, group or handler change it makes (`Broker+ClusterGroups.swift`).
    func subscribed(_ broker: Broker, _ subscription: Subscription) {
        broker.clusterSubscribed(subscription)
    }

    /// Queues the interest, group or handler change it makes (`Broker+ClusterGroups.swift`).
    func unsubscribed(_ broker: Broker, _ subscription: Subscription) {
        broker.clusterUnsubscribed(subscription)
    }

    /// With `current` or `since`, reads them from Redis and answers then
    /// (`Broker+ClusterCatchUp.swift`); without, answers at once.
    func answerSubscribe(_ broker: Broker, _ subscription: Subscription, catchUp: CatchUp) {
        guard catchUp.current || catchUp.since != nil else {
            return broker.answerSubscribeLocally(subscription, catchUp: catchUp)
        }
        broker.startClusterCatchUp(catchUp, for: subscription, self)
    }

    /// History lives in Redis: the `catchUp` script judges `since`.
    func judgeRecovery(_ broker: Broker, _ catchUp: CatchUp, on pattern: [UInt8]) -> CatchUp {
        catchUp
    }

    /// Runs the op as a script in Redis (`Broker+ClusterState.swift`).
    func performStateOp(_ broker: Broker, _ op: Op, for session: Session) throws(HeraldError) {
        try broker.clusterStateOp(op, self, for: session)
    }

    /// The cluster's handlers of the level, some on other nodes (`Broker+ClusterSignals.swift`).
    func signalCandidates(_ broker: Broker, matching level: [UInt8]) -> [SignalCandidate] {
        broker.clusterHandlers(matching: level)
    }

    /// Queues the change for the other nodes; the answer waits until they applied it.
    func locksChanged(_ broker: Broker, _ changed: [Lock], added: Bool, by session: Session) {
        broker.clusterLocksChanged(changed, added: added, by: session)
    }

    /// A channel-wide lock covers the other nodes' subscriptions too: the answer waits for
    /// their lists (`Broker+ClusterLockQuery.swift`).
    func answerLock(_ broker: Broker, _ session: Session, _ op: Op, pattern: [UInt8]?,
                    covered: [[UInt8]], truncated: Bool, released: Int) {
        guard let pattern, !broker.scanner.isPresent(.subs) else {
            return broker.answerLock(session, op, pattern: pattern, covered: covered, truncated: truncated, released: released)
        }
        broker.askCoveredSubscriptions(of: pattern, for: session, op, released: released, on: self)
    }

    /// The other nodes' subscriptions are theirs to list: the answer waits for them.
    func answerLocks(_ broker: Broker, _ session: Session, on name: [UInt8]) {
        let arguments = [[UInt8(ascii: "l")], name, Array((session.user?.name ?? "").utf8)]
        broker.park(session, on: self, .locksQuery, channel: nil, arguments: arguments, op: .locks, claiming: name)
    }

    /// Tells the other nodes every lock of `owner` went.
    func locksReleased(_ broker: Broker, ownedBy owner: ConnectionID) {
        broker.clusterLocksReleased(ownedBy: owner)
    }

    /// Tells the other nodes these locks went.
    func locksRevoked(_ broker: Broker, _ revoked: [Lock], owner: ConnectionID) {
        broker.clusterLocksRevoked(revoked, owner: owner)
    }

    /// Sets the link through Redis (`Broker+ClusterLinks.swift`).
    func link(_ broker: Broker, _ channel: [UInt8], to parent: [UInt8], for session: Session) {
        broker.linkInCluster(channel, to: parent, for: session, self)
    }

    /// Drops the link through Redis (`Broker+ClusterLinks.swift`).
    func unlink(_ broker: Broker, _ channel: [UInt8], for session: Session) {
        broker.unlinkInCluster(channel, for: session, self)
    }

    /// Removes them from Redis, nobody waiting.
    func linksDropped(_ broker: Broker, _ channels: [[UInt8]], owner: ConnectionID) {
        unlinkAll(channels, owner: owner)
    }

    /// Behind the session's requests waiting for Redis, as an `answer` call in their order
    /// (`Broker+ClusterState.swift`).
    func answerInTurn(_ broker: Broker, _ session: Session, _ build: (inout [UInt8]) -> Void) {
        broker.answerInTurn(session, build)
    }

    /// Drops the rights to reply that the reload took (`Broker+ClusterRequests.swift`).
    func revokeDeliveredRequestRights(_ broker: Broker) {
        broker.revokeDeliveredRequestRights()
    }

    /// A delivered request's reply rights, or another node's offer, ran out.
    func deadlinePassed(_ broker: Broker, _ kind: DeadlineKind, id: Int) {
        switch kind {
        case .deliveredRequest: broker.expireDeliveredRequest(id)
        case .remoteOffer: broker.forgetRemoteOffer(id)
        case .request, .signalOffer, .auth: return
        }
    }

    /// Looks the offer up among the other nodes' (`Broker+ClusterSignals.swift`).
    func remoteOffer(_ broker: Broker, _ number: Int?, to session: Session) -> RemoteOffer? {
        broker.remoteOffer(number, to: session)
    }

    /// Sends the verdict to the sender's node.
    func answerRemoteOffer(_ broker: Broker, _ offer: RemoteOffer, by session: Session, _ verdict: ClusterSignalMessage.Verdict) {
        broker.answerRemoteOffer(offer, by: session, verdict)
    }

    /// Relays the callback to the sender's node.
    func relayCallback(_ broker: Broker, _ offer: RemoteOffer, from session: Session) throws(HeraldError) {
        try broker.relayCallback(offer, from: session)
    }

    /// Sends the offer to the handler's node.
    func offerRemotely(_ broker: Broker, _ pending: PendingSignal, to handler: ClusterHandler, level: [UInt8], now: Int) {
        broker.offerRemotely(pending, to: handler, level: level, now: now)
    }

    /// Tells the senders' nodes the offers `session` held are gone.
    func passRemoteOffers(_ broker: Broker, of session: Session) {
        broker.passRemoteOffers(of: session)
    }

    /// Tells the nodes that were offered the signal it ended.
    func withdrawRemoteOffers(_ broker: Broker, of pending: PendingSignal) {
        broker.withdrawRemoteOffers(of: pending)
    }

    /// Passes the offers the reload took away.
    func revokeRemoteOffers(_ broker: Broker) {
        broker.revokeRemoteOffers()
    }

    /// Claims the channel in Redis (`Broker+ClusterInstances.swift`).
    func claim(_ broker: Broker, _ name: [UInt8], for session: Session) {
        broker.claimInCluster(name, for: session, self)
    }

    /// A local owner's channel goes through Redis first: the subscriptions here go when it
    /// comes back, after the events published before it, as on every other node.
    func removeInstanceChannel(_ broker: Broker, _ name: [UInt8], owner: ConnectionID?, reason: Broker.RemovalReason) {
        guard let owner else { return broker.dropExactSubscriptions(of: name) }
        undeclare(name, owner: owner, reason: Array(reason.rawValue.utf8))
    }
}
