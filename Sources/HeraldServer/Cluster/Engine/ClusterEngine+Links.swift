import CLibUV
import HeraldBroker

/// Links across nodes, the engine's side (docs/cluster.md, "Signals and links"): a
/// `link`/`unlink` reply is held until every live node acknowledged its version, so the
/// route is the same on every node from the `ok` on. The links' mirror is `LinkMirror`.
extension ClusterEngine {
    /// Holds a `link`/`unlink` reply until every live node applied `version`.
    func holdUntilApplied(_ call: ClusterState.ScriptCall, _ reply: RedisReply, version: Int) {
        heldReplies.append((version, uv_hrtime(), call, reply))
        releaseBarriers(now: uv_hrtime())
    }

    /// Delivers, in order, the held replies every live node has applied (or that waited
    /// longer than a barrier may, or all of them once Redis is gone).
    func releaseHeldReplies(now: UInt64) {
        while let first = heldReplies.first {
            let applied = minimumAcknowledged >= first.version
            guard applied || !isReady || now &- first.since > Self.barrierTimeoutNs else { return }
            heldReplies.removeFirst()
            deliver(first.call, first.reply)
        }
    }
}
