import HeraldBroker

/// A table every node mirrors through Redis. Rows are keyed by owner (a global client id
/// whose top 32 bits are its node, `ClusterOwner.node(of:)`; for interest, the node), so
/// "not mine", "node gone" and the resync after an outage are one rule per table. Each
/// table is a small adapter between the broker's table and the engine's I/O; the sync rules
/// (hold, replay, acknowledge) are `MirrorSync`'s, the order of the snapshot reads
/// `ClusterLifecycle`'s.
protocol MirroredTable: AnyObject {
    /// Its kind of message on the interest channel (the change codec: one parse for every
    /// table, `MirrorMessage.read`).
    associatedtype Message: MirrorWireMessage
    /// Which table it is.
    var tag: MirrorTableTag { get }
    /// Applies a change (another node's; this node's own where the table enters them from
    /// the announcement, `MirrorTableTag.appliesOwnChanges`).
    func apply(_ message: Message)
    /// Applies the snapshot's entries (the reply after its version), read at `version`.
    func applySnapshot(_ entries: [RedisReply], at version: Int)
    /// Node `node` left or was declared down: every row of its owners goes.
    func nodeGone(_ node: Int)
    /// After an outage (or a lapse of this node's liveness): makes Redis's record of this
    /// node's rows exactly what it holds, and announces every one of them again, in full.
    func resync()
}

extension MirroredTable {
    /// Parses an interest-channel payload. - Returns: nil when it is not this table's.
    func parse(_ payload: [UInt8]) -> MirrorMessage? {
        MirrorMessage.read(payload, as: Message.self)
    }

    /// Applies a held or heard change: its message is this table's (the table parsed it).
    func apply(_ change: MirrorChange) {
        if let message = change.message as? Message { apply(message) }
    }

    /// How its snapshot meets the rows held before it (`MirrorTableTag.policy`).
    var policy: MirrorSnapshotPolicy { tag.policy }
    /// The script that reads every live node's rows at one version (its reply: the version,
    /// then the entries); nil: the table has no snapshot.
    var snapshotScript: String? { tag.snapshotScript }
    /// The table's name in logs.
    var name: String { tag.name }
}

/// What every table adapter holds: the engine it does its I/O through.
class EngineMirror {
    /// The engine (which owns the adapter).
    unowned let engine: ClusterEngine
    /// Which table it is.
    let tag: MirrorTableTag

    /// The adapter of `engine`'s table `tag`.
    init(_ engine: ClusterEngine, _ tag: MirrorTableTag) {
        self.engine = engine
        self.tag = tag
    }

    /// Runs `body` on the broker, under its lock.
    func withBroker<R>(_ body: (Broker) -> R) -> R {
        engine.server.shared.withLock(body)
    }
}
