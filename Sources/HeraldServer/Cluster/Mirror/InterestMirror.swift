import HeraldBroker

/// The interest table's mirror (docs/cluster.md, "Interest"): `+NODE V PATTERN` and
/// `-NODE V PATTERN` on the interest channel, every live node's patterns read by the
/// `snapshot` script, the routing table `InterestTable` as the broker-free table.
///
/// Its snapshot is a merge (`MirrorSnapshotPolicy.merge`): a node whose liveness key lapsed
/// while Redis was away is missing from the snapshot but keeps its routes, and the table's
/// version per entry refuses every held change the snapshot already covers.
final class InterestMirror: EngineMirror, MirroredTable {
    /// Enters the change in the routing table (refused there when an entry is newer).
    func apply(_ message: ClusterInterestMessage) {
        // Ready, changes arrive in order: a removal need not keep its version (the table's
        // memory returns when a node's subscribers go, however many patterns churned).
        engine.table.apply(node: message.node, pattern: message.pattern, added: message.added, version: message.version,
                           dropsRemoved: engine.isReady)
        watchPresence(message.pattern, node: message.node, added: message.added)
    }

    /// Tells the broker of another node's `$presence` pattern (`Broker+ClusterPresence`).
    private func watchPresence(_ pattern: [UInt8], node: Int, added: Bool) {
        guard node != engine.nodeIndex, Broker.isPresencePattern(pattern) else { return }
        withBroker { broker in broker.remotePresenceWatch(pattern, node: node, added: added) }
    }

    /// `NODE, {PATTERN…}` pairs, merged into the table at `version`; a node not counted yet
    /// counts as having acknowledged `version`.
    func applySnapshot(_ entries: [RedisReply], at version: Int) {
        for entry in entries.chunks(of: 2) {
            guard let node = entry[0].bytes.flatMap(ClusterWireNumber.parse) else { continue }
            engine.nodeSeen(node, at: version)
            for pattern in entry[1].elements ?? [] {
                if let bytes = pattern.bytes {
                    engine.table.apply(node: node, pattern: bytes, added: true, version: version)
                    watchPresence(bytes, node: node, added: true)
                }
            }
        }
    }

    /// The node's entries go, and the patterns nobody else holds.
    func nodeGone(_ node: Int) {
        engine.table.forget(node: node)
        withBroker { broker in broker.remotePresenceNodeGone(node) }
    }

    /// Registers every local pattern and queue group membership again (re-adding what is
    /// still there is harmless: the sets are sets and each change carries a new version).
    func resync() {
        let patterns = withBroker { broker in broker.localInterestPatterns() }
        for pattern in patterns {
            engine.sendInterest(ClusterState.InterestChange(pattern: pattern, added: true, ticket: 0))
        }
        let groups = withBroker { broker in broker.localGroupMemberships() }
        for group in groups {
            let change = ClusterState.InterestChange(pattern: group.pattern, group: group.group, members: group.members,
                                                     ticket: 0)
            engine.sendInterest(change, again: true)
        }
    }
}
