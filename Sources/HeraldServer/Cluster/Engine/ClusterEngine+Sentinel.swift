import CLibUV
import HeraldBroker

/// One primary at a time under Sentinel, on every shard that names sentinels: each shard's
/// `PrimaryFollower` fences the old primary and moves its links (docs/cluster.md, "Failover
/// and fail-stop"; issue 33, "Several Redis primaries").
extension ClusterEngine {
    /// Every shard's follower, shard 0's first.
    var followers: [PrimaryFollower] {
        [follower].compactMap { $0 } + dataShards.compactMap(\.follower)
    }

    /// Starts listening to every shard's sentinels; the drain marker names this node.
    func startSentinelWatch() {
        for follower in followers {
            follower.marker = { [unowned self] in Array((prefix + "drained:" + String(nodeIndex)).utf8) }
            follower.start()
        }
    }

    /// The poll, once a period: each follower asks its sentinels and moves when they name
    /// another primary.
    func followSentinel() {
        for follower in followers { follower.poll() }
    }
}
