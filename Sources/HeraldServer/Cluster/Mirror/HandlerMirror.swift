import HeraldBroker

/// The signal handler table's mirror (docs/cluster.md, "Signals and links"): `H…`
/// announcements on the interest channel (this node's own too: the table holds every
/// handler with the score Redis gave it), every live node's handlers read by
/// `handlerSnapshot`, the broker's `ClusterHandlerTable`.
///
/// Its snapshot is exact (`MirrorSnapshotPolicy.exact`), for the lock table's reason. Its
/// resync sets each local connection's handlers with an `S` call, announced in full.
final class HandlerMirror: EngineMirror, MirroredTable {
    /// Any node's handler change, this one's included.
    func apply(_ message: ClusterHandlerMessage) {
        withBroker { broker in
            broker.applyClusterHandlers(op: message.op, owner: message.owner, handlers: message.handlers, names: message.names)
        }
    }

    /// `OWNER, {NAME, SCORE PATTERN, …}` pairs: the other nodes' handlers here become
    /// exactly those.
    func applySnapshot(_ entries: [RedisReply], at version: Int) {
        var snapshot: [ClusterHandler] = []
        for entry in entries.chunks(of: 2) {
            guard let owner = entry[0].bytes.flatMap(ClusterWireNumber.parse) else { continue }
            for pair in (entry[1].elements ?? []).chunks(of: 2) {
                if let handler = Self.handler(owner: owner, name: pair[0], value: pair[1]) { snapshot.append(handler) }
            }
        }
        let node = engine.nodeIndex
        withBroker { broker in broker.replaceClusterHandlers(with: snapshot, ownNode: node) }
    }

    /// One snapshot entry: `name` and `SCORE PATTERN`. - Returns: nil when malformed.
    private static func handler(owner: ConnectionID, name: RedisReply, value: RedisReply) -> ClusterHandler? {
        guard let name = name.bytes, let value = value.bytes, let space = value.firstIndex(of: 32),
              let score = ClusterWireNumber.parse(value[..<space]) else { return nil }
        return ClusterHandler(owner: owner, name: name, pattern: Array(value[(space + 1)...]), score: score)
    }

    /// Every handler of the node's connections goes.
    func nodeGone(_ node: Int) {
        withBroker { broker in broker.releaseClusterHandlers(ofNode: node) }
    }

    /// Drops the handlers Redis still has for connections of this node that no longer hold
    /// any, then sets each connection's handlers exactly, keeping the scores they had (a
    /// Redis restarted without its data lost them; one made while Redis was away gets its
    /// score now).
    func resync() {
        let local = withBroker { broker in broker.localHandlers() }
        let owners = local.map { Array(String($0.owner).utf8) }
        engine.commands.send(engine.scriptCall("handlerResync") + [Array(String(engine.nodeIndex).utf8)] + owners) { _ in }
        for (owner, handlers) in local {
            var change = ClusterState.InterestChange(pattern: [], added: true, ticket: 0)
            change.handlerOwner = owner
            change.handlerOp = UInt8(ascii: "S")
            change.handlerRecords = handlers.flatMap { [$0.name, $0.pattern, Array(String($0.score).utf8)] }
            engine.sendHandlers(change, owner: owner)
        }
    }
}
