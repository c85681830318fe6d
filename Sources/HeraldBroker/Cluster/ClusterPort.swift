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

    /// `declare` of an instance channel nobody owns here, once admitted: claims and answers.
    func claim(_ broker: Broker, _ name: [UInt8], for session: Session)
    /// An instance channel lost its owner: its exact subscriptions go (through Redis first
    /// when it has a local owner in cluster mode, so every node drops them in one order).
    func removeInstanceChannel(_ broker: Broker, _ name: [UInt8], owner: ConnectionID?, reason: Broker.RemovalReason)
}
