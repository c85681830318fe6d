import HeraldWire

/// The one way cluster mode enters the broker (docs/cluster.md): every op that a cluster
/// node does differently from a node alone asks the port, once per op and never per
/// delivery. `SingleNodePort` does the op here; `ClusterState` sends it through Redis.
///
/// The broker passes itself to each call: the port holds no broker, so neither owns the
/// other twice.
protocol ClusterPort: AnyObject {
    /// This node's name (`cluster.node`), the `node` field of `info` and `stats`; nil alone.
    var node: String? { get }
    /// What ids unique across the cluster (signal ids) carry in their high bits: the node's
    /// index shifted by 32, or 0 alone.
    var idBase: Int { get }
    /// The highest interest ticket every node acknowledged (alone: every ticket, nothing
    /// waits for another node).
    var ticketsDone: Int { get }

    /// `pub`, after its request was read.
    func publish(_ broker: Broker, from session: Session) throws(HeraldError)
    /// `req`, once it was admitted with its `timeout_ms`.
    func request(_ broker: Broker, from session: Session, now: Int, timeoutMs: Int) throws(HeraldError)
    /// `reply`.
    func reply(_ broker: Broker, from session: Session) throws(HeraldError)
    /// Publishes the broker's queued `$sys` events (there is at least one).
    func publishSystemEvents(_ broker: Broker)

    /// A subscription was added to the index (its node's interest may have grown).
    func subscribed(_ broker: Broker, _ subscription: Subscription)
    /// A subscription left the index (its node's interest may have shrunk).
    func unsubscribed(_ broker: Broker, _ subscription: Subscription)
    /// Answers a new subscription and sends what its `current`/`since` asked for.
    func answerSubscribe(_ broker: Broker, _ subscription: Subscription, catchUp: CatchUp)
    /// Whether a `since` can be served from the history (`recovered`), as far as it is
    /// known when the `sub` is read. - Returns: `catchUp`, judged.
    func judgeRecovery(_ broker: Broker, _ catchUp: CatchUp, on pattern: [UInt8]) -> CatchUp

    /// A retained-state op (`get`, `set`, `del`, `touch`, and the list ops).
    func performStateOp(_ broker: Broker, _ op: Op, for session: Session) throws(HeraldError)

    /// The handlers a signal's `level` offers it to, in order.
    func signalCandidates(_ broker: Broker, matching level: [UInt8]) -> [SignalCandidate]

    /// A connection's `lock`/`unlock` changed these locks (`added`: taken).
    func locksChanged(_ broker: Broker, _ changed: [Lock], added: Bool, by session: Session)
    /// Answers a `lock`/`unlock` whose locks are changed.
    func answerLock(_ broker: Broker, _ session: Session, _ op: Op, pattern: [UInt8]?,
                    covered: [[UInt8]], truncated: Bool, released: Int)
    /// Answers `locks {ch}` for a checked concrete `name`.
    func answerLocks(_ broker: Broker, _ session: Session, on name: [UInt8])
    /// Every lock of a departing connection went.
    func locksReleased(_ broker: Broker, ownedBy owner: ConnectionID)
    /// Locks released without an answer (a reload took the right away).
    func locksRevoked(_ broker: Broker, _ revoked: [Lock], owner: ConnectionID)

    /// `link`, once admitted: sets the link and answers.
    func link(_ broker: Broker, _ channel: [UInt8], to parent: [UInt8], for session: Session)
    /// `unlink` of the caller's own link: drops it and answers.
    func unlink(_ broker: Broker, _ channel: [UInt8], for session: Session)
    /// Links of `owner` dropped without an answer (it left, or lost the right).
    func linksDropped(_ broker: Broker, _ channels: [[UInt8]], owner: ConnectionID)

    /// Writes an answer made now, in its turn: alone at once; in cluster mode after the
    /// answers of the session's requests still waiting for Redis.
    func answerInTurn(_ broker: Broker, _ session: Session, _ build: (inout [UInt8]) -> Void)
    /// After a reload: connections whose user may no longer publish on the channel of another
    /// node's request delivered to them lose the right to reply to it.
    func revokeDeliveredRequestRights(_ broker: Broker)
    /// A deadline of cluster mode's own (`deliveredRequest`, `remoteOffer`) is due.
    func deadlinePassed(_ broker: Broker, _ kind: DeadlineKind, id: Int)

    /// Another node's signal offered to `session` under `number`, if it is one (alone: never).
    func remoteOffer(_ broker: Broker, _ number: Int?, to session: Session) -> RemoteOffer?
    /// A handler's verdict on another node's signal, sent back.
    func answerRemoteOffer(_ broker: Broker, _ offer: RemoteOffer, by session: Session, _ verdict: ClusterSignalMessage.Verdict)
    /// A handler's `callback` on another node's signal, relayed to the sender's node.
    func relayCallback(_ broker: Broker, _ offer: RemoteOffer, from session: Session) throws(HeraldError)
    /// Offers a signal of this node to a handler on another node (`SignalCandidate.remote`).
    func offerRemotely(_ broker: Broker, _ pending: PendingSignal, to handler: ClusterHandler, level: [UInt8], now: Int)
    /// `session` leaves or can no longer answer: the other nodes' offers it holds pass.
    func passRemoteOffers(_ broker: Broker, of session: Session)
    /// A signal of this node ended: the other nodes drop the offers they still hold for it.
    func withdrawRemoteOffers(_ broker: Broker, of pending: PendingSignal)
    /// After a reload: other nodes' offers held by connections whose user may no longer see
    /// the signal's origin pass.
    func revokeRemoteOffers(_ broker: Broker)

    /// `declare` of an instance channel nobody owns here, once admitted: claims and answers.
    func claim(_ broker: Broker, _ name: [UInt8], for session: Session)
    /// An instance channel lost its owner: its exact subscriptions go (through Redis first
    /// when it has a local owner in cluster mode, so every node drops them in one order).
    func removeInstanceChannel(_ broker: Broker, _ name: [UInt8], owner: ConnectionID?, reason: Broker.RemovalReason)
}
