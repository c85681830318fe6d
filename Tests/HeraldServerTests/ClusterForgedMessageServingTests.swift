import Foundation
import HeraldTestSupport
import Testing

/// Messages on the interest channel that anyone with Redis access can publish (issue 32,
/// item 9): a forged "declared down" for live nodes changes nothing (Redis does not confirm
/// it), costs one check per node at a time, and fills no log.
@Suite(.serialized) struct ClusterForgedMessageServingTests {
    @Test func forgedNodeDownMessagesForLiveNodesAreIgnored() async throws {
        let redis = try TestRedis()
        defer { redis.stop() }
        let nodes = try ["n0", "n1"].map { try ClusterTestNodes.node(redis, $0, timeoutMs: 2_000) }
        let (subscriber, _) = try ClusterTestNodes.client(nodes[0])
        try ClusterTestNodes.ok(subscriber, #"{"op":"sub","ch":"forge.x"}"#, "sub")
        let (publisher, _) = try ClusterTestNodes.client(nodes[1])
        // Every index a node of this test can have, many times over, as fast as Redis takes them.
        for round in 0..<200 {
            for index in 1...4 {
                _ = RedisCommandLine.run(port: redis.port, ["PUBLISH", "herald:interest", "d\(index) \(1_000_000 + round)"])
                _ = RedisCommandLine.run(port: redis.port, ["PUBLISH", "herald:interest", "l\(index)"])
            }
        }
        try ClusterTestNodes.ok(publisher, #"{"op":"pub","ch":"forge.x","data":1,"rid":1}"#, "pub")
        #expect(try subscriber.frame()["data"] as? Int == 1, "the routes to n0 are still there")
        for node in nodes {
            #expect(!node.log.contains { $0.contains("declared down while running") }, "no node registered again")
            #expect(!node.log.contains { $0.contains("cluster node declared down") })
            let ignored = node.log.filter { $0.contains("does not confirm") }.count
            #expect(ignored <= 20, "the log holds a few lines, not one per message: \(ignored)")
        }
    }
}
