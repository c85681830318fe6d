import Foundation
import HeraldTestSupport
import Testing

/// In cluster mode `stats` carries the node's Redis link (issue 37: the console shows each
/// node's link from it): `cluster_ready` 1 while connected, 0 once Redis is gone, and the
/// last round trip. A single node carries neither.
@Suite(.enabled(if: TestRedis.isAvailable, "needs Debian's redis-server"), .serialized)
struct ClusterLinkStatsTests {
    private func stats(_ client: TestClient) throws -> [String: Any] {
        try client.request(#"{"op":"stats","rid":"s"}"#)
    }

    private func waitFor(_ client: TestClient, ready: Int) throws -> [String: Any] {
        let deadline = Date().addingTimeInterval(10)
        var last: [String: Any] = [:]
        repeat {
            last = try stats(client)
            if last["cluster_ready"] as? Int == ready { return last }
            Thread.sleep(forTimeInterval: 0.1)
        } while Date() < deadline
        return last
    }

    @Test func statsCarriesTheNodesRedisLinkAndItsLoss() throws {
        let redis = try TestRedis()
        let node = try DaemonProcess(config: #"heartbeat_ms: 200, cluster: { redis: "redis://127.0.0.1:\#(redis.port)", node: "s", node_timeout_ms: 1000 }"#)
        let client = try node.client()
        let up = try waitFor(client, ready: 1)
        #expect(up["node"] as? String == "s")
        #expect(up["cluster_ready"] as? Int == 1, "\(up)")
        #expect(up["cluster_redis_rtt_us"] is Int)
        redis.stop()
        let down = try waitFor(client, ready: 0)
        #expect(down["cluster_ready"] as? Int == 0, "not ready without Redis: \(down)")
    }

    @Test func aSingleNodesStatsHasNoClusterFigures() throws {
        let daemon = try DaemonProcess()
        let answer = try stats(try daemon.client())
        #expect(answer["connections"] as? Int == 1)
        #expect(answer["cluster_ready"] == nil && answer["cluster_redis_rtt_us"] == nil)
    }
}
