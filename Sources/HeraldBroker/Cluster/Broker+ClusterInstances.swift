import HeraldWire

/// Instance channels across nodes (docs/cluster.md, "Instance channels"): ownership is a
/// key in Redis (`ClusterInstanceScripts`), so `declare` is exclusive cluster-wide; a
/// removal clears the channel's ownership, retained state, history and `seq` in Redis and is
/// announced to every node, each of which tells its exact subscribers `removed`.
///
/// This node's table (`instances`) keeps the owners connected here, which is what
/// `max_declared`, `remove` and the owner's teardown read; a `declare` of a name it does
/// not own yet waits for Redis (the connection's next lines wait, as for a state op).
extension Broker {
    /// Parks `session` until Redis says whether it may own `name`.
    func claimInCluster(_ name: [UInt8], for session: Session, _ cluster: ClusterState) {
        let arguments = [Array(String(cluster.nodeIndex).utf8), Array(String(session.id).utf8), name]
        park(session, on: cluster, .declare, channel: nil, arguments: arguments, op: .declare, claiming: name)
    }

    /// The `declare` script answered `{0}` (claimed) or `{1, OWNER}` (another owner holds it).
    func finishDeclare(of name: [UInt8], by session: Session, result: ClusterValue) {
        guard let parts = result.elements, let status = parts.first?.int else {
            return failUnavailable(session, result)
        }
        guard status == 0 else {
            let owner = parts.count > 1 ? parts[1].bytes.map { String(decoding: $0, as: UTF8.self) } ?? "" : ""
            return writeError(session, code: "conflict", message: "channel \"" + String(decoding: name, as: UTF8.self)
                + "\" is owned by c" + owner, rev: nil)
        }
        if let owner = instances.owner(of: name), owner != session.id {
            // Unreachable while Redis keeps one owner per name; never two owners here.
            return writeError(session, code: "conflict", message: "channel \"" + String(decoding: name, as: UTF8.self)
                + "\" is owned by c" + String(owner), rev: nil)
        }
        acceptDeclaration(of: name, by: session)
    }

    /// A claim came back for a connection that left meanwhile: Redis gave it the name, so
    /// it is removed again there (and on every node), as if the owner had disconnected.
    func abandonClaim(of name: [UInt8], by owner: ConnectionID, result: ClusterValue, _ cluster: ClusterState) {
        guard result.elements?.first?.int == 0 else { return }
        cluster.undeclare(name, owner: owner, reason: Array(RemovalReason.disconnect.rawValue.utf8))
    }

    /// A removal came back from Redis (this node's or another's, or the reaper's for a dead
    /// node), or could not reach it: ends the exact subscriptions on each channel here.
    /// A channel a connection of this node owns by now (declared again after the removal,
    /// whose announcement was still on its way) keeps its record.
    public func clusterChannelsRemoved(_ names: [[UInt8]]) {
        for name in names {
            if instances.owner(of: name) != nil {
                for subscription in index.subscriptions(withPattern: name).sorted(by: { $0.serial < $1.serial }) {
                    tellRemoved(subscription, name)
                    end(subscription)
                }
            } else {
                dropExactSubscriptions(of: name)
            }
        }
        flushSystemEvents()
    }

    /// Every instance channel owned here, by owner (to claim again after Redis came back or
    /// after this node was declared down while it ran).
    ///
    /// Declares still waiting for Redis's answer count as claims: the resync after an outage
    /// runs after a `declare` sent before it (held while Redis was away), and would undo the
    /// owner Redis just took (chaos, issue 33: two owners of one channel).
    public func localInstanceClaims() -> [(owner: ConnectionID, names: [[UInt8]])] {
        var claims: [ConnectionID: [[UInt8]]] = [:]
        for session in sessions.values {
            let names = instances.owned(by: session.id)
            if !names.isEmpty { claims[session.id] = names }
        }
        for waiting in cluster?.waiting.values ?? [:].values where waiting.op == .declare {
            guard let name = waiting.channel, sessions[waiting.session.id] === waiting.session else { continue }
            if claims[waiting.session.id]?.contains(name) != true { claims[waiting.session.id, default: []].append(name) }
        }
        return claims.map { ($0.key, $0.value) }
    }
}
