import HeraldBroker

/// The lock table's mirror (docs/cluster.md, "Locks"): `L`/`U`/`X` announcements on the
/// interest channel, every live node's locks read by `lockSnapshot`, the broker's
/// `LockTable` holding remote owners beside local ones.
///
/// Its snapshot is exact (`MirrorSnapshotPolicy.exact`): a lock change carries no version
/// per row, so a merge could not tell a release missed while Redis was away from a lock the
/// snapshot lacks. The price, a node left out of a snapshot (its liveness lapsed) losing its
/// locks here, is paid by the resync, which announces every lock in full.
final class LockMirror: EngineMirror, MirroredTable {
    /// Another node's lock change (this node's own are applied already).
    func apply(_ message: ClusterLockMessage) {
        withBroker { broker in
            broker.applyClusterLocks(owner: message.owner, records: message.records, added: message.op == UInt8(ascii: "L"))
        }
    }

    /// `OWNER, {RECORD…}` pairs: the other nodes' locks here become exactly those.
    func applySnapshot(_ entries: [RedisReply], at version: Int) {
        let rows = entries.chunks(of: 2).compactMap { entry in
            entry[0].bytes.flatMap(ClusterWireNumber.parse).map { (owner: $0, records: (entry[1].elements ?? []).compactMap(\.bytes)) }
        }
        let node = engine.nodeIndex
        withBroker { broker in broker.replaceClusterLocks(with: rows, ownNode: node) }
    }

    /// Every lock of the node's connections goes.
    func nodeGone(_ node: Int) {
        withBroker { broker in broker.releaseClusterLocks(ofNode: node) }
    }

    /// Makes Redis's record of this node's locks exactly what it holds, then announces every
    /// owner's locks in full (`LockResync`: the differences alone are not enough).
    func resync() {
        let node = engine.nodeIndex
        let owned = withBroker { broker in broker.localLockRecords(ownNode: node) }
        for call in LockResync.calls(node: node, owned: owned) {
            engine.commands.send(engine.scriptCall(call.script) + call.arguments) { _ in }
        }
    }
}
