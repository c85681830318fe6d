import HeraldBroker

/// The instance channels' owners (docs/cluster.md, "Instance channels"), as a mirrored
/// table: ownership is a key in Redis and this node's table keeps only the owners connected
/// here, so there is no snapshot to read (a `declare` asks Redis). What it shares with the
/// other tables is the interest channel (`ROWNER REASON CH CH…`: channels removed, applied
/// at once, ready or not, since they only end subscriptions here) and the resync after an
/// outage. A dead node's channels are cleared in Redis by the reaper a slice per period
/// (`reapInstances`), whose removals arrive as announcements: nothing to drop here.
final class InstanceOwnerMirror: EngineMirror, MirroredTable {
    /// Ends the exact subscriptions of the removed channels here.
    ///
    /// With several shards, the removal script cleared the channels of shard 0 only: the
    /// others are cleared on their shards by one node, the owner's, or, when that node is
    /// gone (the reaper's removals), the live node with the lowest index.
    func apply(_ message: ClusterRemovalMessage) {
        withBroker { broker in broker.clusterChannelsRemoved(message.names) }
        guard engine.shardMap.count > 1 else { return }
        let ownerNode = message.owner >> 32
        let clears = ownerNode == engine.nodeIndex
            || (engine.acknowledged[ownerNode] == nil && engine.acknowledged.keys.min() == engine.nodeIndex)
        if clears { engine.clearOnShards(message.names) }
    }

    /// Never called: there is no snapshot.
    func applySnapshot(_ entries: [RedisReply], at version: Int) {}

    /// Nothing: the reaper's removals end the dead node's channels.
    func nodeGone(_ node: Int) {}

    /// Makes Redis's record of this node's instance channels exactly what it holds (a
    /// removal lost with a primary that died is cleared, `ClusterInstanceScripts.resync`),
    /// then claims every one again (Redis restarted without its data, or this node was
    /// declared down while it ran): one `declare` call per owner, at most
    /// `ClusterState.undeclareBatch` channels each.
    func resync() {
        let node = Array(String(engine.nodeIndex).utf8)
        let claims = withBroker { broker in broker.localInstanceClaims() }
        var resync = engine.scriptCall("instanceResync") + [node]
        for (owner, names) in claims {
            for name in names { resync += [name, Array(String(owner).utf8)] }
        }
        engine.commands.send(resync) { _ in }
        for (owner, names) in claims {
            var start = 0
            while start < names.count {
                let end = min(start + ClusterState.undeclareBatch, names.count)
                let arguments = [node, Array(String(owner).utf8)] + names[start..<end]
                engine.sendCall(ClusterState.ScriptCall(unwaited: .declare, arguments: arguments))
                start = end
            }
        }
    }
}
