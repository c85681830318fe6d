import HeraldBroker

/// The lock table's mirror (docs/cluster.md, "Locks"): `L`/`U`/`X` announcements on the
/// interest channel, every live node's locks read by `lockSnapshot`, the broker's
/// `LockTable` holding remote owners beside local ones.
///
/// Its snapshot is exact (`MirrorSnapshotPolicy.exact`): a lock change carries no version
/// per row, so a merge could not tell a release missed while Redis was away from a lock the
/// snapshot lacks. The price, a node left out of a snapshot (its liveness lapsed) losing its
/// locks here, is paid by the resync, which announces every lock in full.
final class LockMirror: MirroredTable {
    private unowned let engine: ClusterEngine

    /// The mirror of `engine`'s broker's locks.
    init(_ engine: ClusterEngine) {
        self.engine = engine
    }

    /// `MirrorTableTag.locks`.
    var tag: MirrorTableTag { .locks }
    /// Exact: see the type's documentation.
    var policy: MirrorSnapshotPolicy { .exact }
    /// `ClusterLockScripts.snapshot`.
    var snapshotScript: String? { "lockSnapshot" }
    /// "lock".
    var name: String { "lock" }

    /// `OPNODE V OWNER` then ` LEN:RECORD` per record (`ClusterLockMessage`).
    func parse(_ payload: [UInt8]) -> MirrorMessage? {
        guard ClusterLockMessage.isLockMessage(payload) else { return nil }
        guard let message = ClusterLockMessage(payload) else { return .malformed }
        return .change(version: message.version, .lock(message))
    }

    /// Another node's lock change (this node's own are applied already).
    func apply(_ change: MirrorChange) {
        guard case .lock(let message) = change, message.node != engine.nodeIndex else { return }
        engine.server.shared.withLock { broker in
            broker.applyClusterLocks(owner: message.owner, records: message.records, added: message.op == UInt8(ascii: "L"))
        }
    }

    /// `OWNER, {RECORD…}` pairs: the other nodes' locks here become exactly those.
    func applySnapshot(_ entries: [RedisReply], at version: Int) {
        var snapshot: [(owner: ConnectionID, records: [[UInt8]])] = []
        for entry in entries.chunks(of: 2) {
            if let owner = entry[0].bytes.flatMap(ClusterWireNumber.parse) {
                snapshot.append((owner, (entry[1].elements ?? []).compactMap(\.bytes)))
            }
        }
        let node = engine.nodeIndex
        engine.server.shared.withLock { broker in broker.replaceClusterLocks(with: snapshot, ownNode: node) }
    }

    /// Every lock of the node's connections goes.
    func nodeGone(_ node: Int) {
        engine.server.shared.withLock { broker in broker.releaseClusterLocks(ofNode: node) }
    }

    /// Makes Redis's record of this node's locks exactly what it holds, then announces every
    /// owner's locks in full (`LockResync`: the differences alone are not enough).
    func resync() {
        let node = engine.nodeIndex
        let owned = engine.server.shared.withLock { broker in broker.localLockRecords(ownNode: node) }
        for call in LockResync.calls(node: node, owned: owned) {
            engine.commands.send(engine.scriptCall(call.script) + call.arguments) { _ in }
        }
    }
}
