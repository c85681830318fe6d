import HeraldWire

/// The cluster's signal handler registry, the broker's side (docs/cluster.md, "Signals and
/// links"). A `sub` with `handle:true` registers its handler in Redis, which gives it its
/// place in the cluster's order and announces it; every node (this one too) enters it in
/// its handler table from the announcement, and the `sub` answer waits until every node
/// applied it, so a signal sent anywhere after the `ok` can be offered to it.
extension Broker {
    /// A local handler subscription was made: registered, its answer held until every node
    /// has it.
    func clusterHandlerAdded(_ subscription: Subscription) {
        guard let cluster else { return }
        let records = [subscription.name, subscription.pattern, [UInt8(ascii: "0")]]
        let session = subscription.session
        let ticket = cluster.handlersChanged(owner: session.id, op: UInt8(ascii: "A"), records: records, held: true)
        if session.barriers.isEmpty { retention.heldSessions.append(session) }
        session.holdOutput(untilTicket: ticket)
    }

    /// A local handler subscription ended (or was replaced): unregistered, nobody waits.
    func clusterHandlerRemoved(_ subscription: Subscription) {
        // A subscription retired again after a new one took its name must not remove that one.
        if let named = subscription.session.subscriptions[subscription.name], named !== subscription { return }
        _ = cluster?.handlersChanged(owner: subscription.session.id, op: UInt8(ascii: "R"), records: [subscription.name],
                                     held: false)
    }

    /// A handler change announced by Redis (any node's, this one's too): `A` and `S` carry
    /// handlers (`S`: the owner's exactly these), `R` names, `X` nothing (all of the owner's).
    public func applyClusterHandlers(op: UInt8, owner: ConnectionID, handlers: [ClusterHandler], names: [[UInt8]]) {
        guard let table = cluster?.handlers else { return }
        switch op {
        case UInt8(ascii: "A"):
            for handler in handlers { table.add(handler) }
        case UInt8(ascii: "S"):
            table.removeAll(ownedBy: owner)
            for handler in handlers { table.add(handler) }
        case UInt8(ascii: "R"):
            for name in names { table.remove(owner: owner, name: name) }
        default:
            table.removeAll(ownedBy: owner)
        }
    }

    /// At (re)connect: the other nodes' handlers become exactly `snapshot` (read at one
    /// version); this node's own are kept (it registers them again, `localHandlers`).
    public func replaceClusterHandlers(with snapshot: [ClusterHandler], ownNode: Int) {
        guard let table = cluster?.handlers else { return }
        for owner in table.owners where ClusterOwner.node(of: owner) != ownNode { table.removeAll(ownedBy: owner) }
        for handler in snapshot where ClusterOwner.node(of: handler.owner) != ownNode { table.add(handler) }
    }

    /// A node left or was declared down: its handlers go. Costs the owners with handlers.
    public func releaseClusterHandlers(ofNode node: Int) {
        guard let table = cluster?.handlers else { return }
        for owner in table.owners where ClusterOwner.node(of: owner) == node { table.removeAll(ownedBy: owner) }
    }

    /// This node's handler subscriptions by connection, with the score each has in the
    /// table (0 when it never got one: made while Redis was away), for registering them
    /// again after Redis came back. Costs the local connections' subscriptions.
    public func localHandlers() -> [(owner: ConnectionID, handlers: [ClusterHandler])] {
        guard let table = cluster?.handlers else { return [] }
        var found: [(owner: ConnectionID, handlers: [ClusterHandler])] = []
        for (id, session) in sessions where !session.hasLeft {
            let handlers = session.subscriptions.values.filter(\.isHandler).map { subscription in
                let known = table.handler(owner: id, name: subscription.name)
                let score = known?.pattern == subscription.pattern ? known?.score ?? 0 : 0
                return ClusterHandler(owner: id, name: subscription.name, pattern: subscription.pattern, score: score)
            }
            // Known scores first, in their order; new ones get theirs after them.
            let ordered = handlers.sorted { ($0.score == 0 ? Int.max : $0.score) < ($1.score == 0 ? Int.max : $1.score) }
            if !ordered.isEmpty { found.append((id, ordered)) }
        }
        return found
    }
}
