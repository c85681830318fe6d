import Foundation
import HeraldTestSupport
import Testing

/// Rate limits across nodes (issue 37, item 3; docs/cluster.md, "Rate limits across
/// nodes"): a user's `pub_per_s` holds for the cluster, each node running the user's buckets
/// at its share of the user's connections, rebalanced once a second without a Redis round
/// trip per publish.
@Suite(.enabled(if: TestRedis.isAvailable, "needs Debian's redis-server"), .serialized)
struct ClusterRateLimitServingTests {
    @Test func aUsersPublishRateHoldsForTheClusterNotPerNode() throws {
        let redis = try TestRedis()
        let nodes = try ["n0", "n1"].map { name in
            try DaemonProcess(config: #"cluster: { redis: "redis://127.0.0.1:\#(redis.port)", node: "\#(name)" }, "#
                + #"auth: { users: [ { name: "slow", token: "s", limits: { pub_per_s: 100 } } ] }"#,
                arguments: ["--workers", "1"])
        }
        let publishers = try nodes.map { node in
            let client = try node.client()
            #expect(try client.request(#"{"op":"hello","token":"s"}"#)["ok"] as? String == "hello")
            return client
        }
        let start = Date()
        for (index, publisher) in publishers.enumerated() {
            let lines = (0..<500).map { #"{"op":"pub","ch":"bulk.\#(index)","data":\#($0),"rid":\#($0)}"# + "\n" }.joined()
            publisher.send(bytes: Array(lines.utf8))
        }
        for publisher in publishers {
            for _ in 0..<500 { #expect(try publisher.frame(timeout: 40)["ok"] as? String == "pub") }
        }
        let took = Date().timeIntervalSince(start)
        // Per node alone it would take 5 s (500 at 100/s each); shared, 10 s less what both
        // took at the whole rate before the first totals were known (at most 2 s of it).
        #expect(took >= 7, "1,000 publishes at 100/s for the cluster, over 2 nodes, took \(took) s")
        #expect(took < 20, "\(took) s")
        let record = try redis.command("HLEN", "herald:rs:slow")
        #expect(record == "2", "each node says its connections: \(record)")
    }
}
