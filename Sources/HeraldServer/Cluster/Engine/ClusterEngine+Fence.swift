import CLibUV

/// What waits behind a release's fence: a mirrored change with its table, or an answer that
/// must see every change heard before it (another node's `locks` query: answered before a
/// lock queued here is applied, it would list a locked subscription as unlocked).
enum FencedChange {
    /// A change of a mirrored table.
    case change(any MirroredTable, MirrorChange)
    /// Work to run in its turn.
    case action(() -> Void)
}

/// Releases that wait for the data shards (`ShardFence`; docs/cluster.md, "Locks"): with
/// several shards, a lock's release is applied here only after a fence through every
/// serving data shard came back, so an event a shard ran under the lock is suppressed here
/// even when the release, through shard 0, arrived first. With one shard nothing waits.
extension ClusterEngine {
    /// A fence message on this node's channel of a data shard: `FID`.
    static let fenceMark = UInt8(ascii: "F")

    /// Applies a change heard once ready, behind any release still waiting for its fence.
    func applyInOrder(_ change: MirrorChange, to table: any MirroredTable, acknowledge: Int?) {
        guard mirror.isReady, shardMap.count > 1 else {
            apply(change, to: table)
            if let acknowledge { sendAcknowledgement(acknowledge) }
            return
        }
        let steps = fence.heard(.change(table, change), acknowledge: acknowledge,
                                needsFence: needsFence(change), serving: fencedShards, now: uv_hrtime())
        performFence(steps)
    }

    /// Runs `action` now, or in its turn behind the changes waiting for a fence.
    func runInOrder(_ action: @escaping () -> Void) {
        guard fence.isWaiting || !fence.queue.isEmpty else { return action() }
        performFence(fence.heard(.action(action), acknowledge: nil, needsFence: false, serving: fencedShards, now: uv_hrtime()))
    }

    /// A fence came back on `shard`'s link (`FID`).
    func fenceReturned(_ payload: [UInt8], from shard: Int) {
        guard let id = ClusterWireNumber.parse(payload.dropFirst()) else { return }
        performFence(fence.returned(id, from: shard, serving: fencedShards, now: uv_hrtime()))
    }

    /// `shard` stopped serving: nothing from it can come meanwhile.
    func fenceShardLost(_ shard: Int) {
        performFence(fence.shardLost(shard, serving: fencedShards, now: uv_hrtime()))
    }

    /// A fence that did not come back within half the barrier timeout is given up (so this
    /// node still acknowledges before the others count it gone).
    func expireFence() {
        let steps = fence.expire(now: uv_hrtime(), timeoutNs: Self.barrierTimeoutNs / 2, serving: fencedShards)
        if !steps.isEmpty { server.logger.warn("cluster: a shard fence did not come back; releases applied without it") }
        performFence(steps)
    }

    /// Everything queued applies now (the subscription restarts, a snapshot run starts, a
    /// node went).
    func flushFence() {
        guard fence.isWaiting || !fence.queue.isEmpty else { return }
        performFence(fence.flush())
    }

    /// Another node's lock release (`U`, `X`): this node's own are applied when made.
    private func needsFence(_ change: MirrorChange) -> Bool {
        guard let lock = change.message as? ClusterLockMessage, lock.op != UInt8(ascii: "L") else { return false }
        return change.node != nodeIndex
    }

    /// The data shards that serve now.
    private var fencedShards: [Int] { dataShards.filter(\.isReady).map(\.index) }

    private func performFence(_ steps: [ShardFence<FencedChange>.Step]) {
        guard !steps.isEmpty else { return }
        for step in steps {
            switch step {
            case .apply(let fenced, let acknowledge):
                switch fenced {
                case .change(let table, let change): apply(change, to: table)
                case .action(let action): action()
                }
                if let acknowledge { sendAcknowledgement(acknowledge) }
            case .sendFence(let id, let shards):
                for index in shards {
                    let link = dataShards[index - 1].commands
                    link.send([Array("PUBLISH".utf8), ownChannel, [Self.fenceMark] + Array(String(id).utf8)]) { _ in }
                    link.flush()
                }
            }
        }
        commands.flush()
    }
}
