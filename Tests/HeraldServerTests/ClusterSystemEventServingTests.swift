import Foundation
import HeraldTestSupport
import Testing

/// `$sys` events across a real cluster (docs/cluster.md, "Everything else"): a watcher on
/// one node sees every node's system events, each naming its node.
@Suite(.enabled(if: TestRedis.isAvailable, "needs Debian's redis-server"), .serialized)
struct ClusterSystemEventServingTests {
    @Test func aWatcherOnOneNodeSeesEveryNodesSystemEventsNamingTheNode() throws {
        let redis = try TestRedis()
        let nodes = try (0..<3).map { index in
            try DaemonProcess(config: #"cluster: { redis: "redis://127.0.0.1:\#(redis.port)", node: "n\#(index)" },"#,
                              arguments: ["--workers", "1"])
        }
        let watcher = try nodes[0].client()
        #expect(try watcher.request(#"{"op":"sub","ch":"$sys.client.>","sub":"sys"}"#)["ok"] as? String == "sub")
        var seen: [(event: String, node: String, client: String, seq: Int)] = []
        var ids: [String] = []
        for node in nodes[1...] {
            let visitor = try TestClient(port: node.port)
            ids.append((try visitor.frame()["info"] as? [String: Any])?["client"] as? String ?? "")
            visitor.send(#"{"op":"hello","name":"visitor"}"#)
            _ = try visitor.frame()
            visitor.closeNow()
            for _ in 0..<2 {
                let frame = try watcher.frame()
                let data = frame["data"] as? [String: Any] ?? [:]
                seen.append((frame["event"] as? String ?? "", data["node"] as? String ?? "", data["client"] as? String ?? "",
                             frame["seq"] as? Int ?? 0))
            }
        }
        #expect(seen.map(\.event) == ["$sys.client.connected", "$sys.client.disconnected",
                                      "$sys.client.connected", "$sys.client.disconnected"])
        #expect(seen.map(\.node) == ["n1", "n1", "n2", "n2"])
        #expect(seen.map(\.client) == [ids[0], ids[0], ids[1], ids[1]])
        #expect(seen.filter { $0.event == "$sys.client.connected" }.map(\.seq) == [1, 2],
                "one seq per channel for the whole cluster")
        #expect(Set(ids).count == 2, "client ids differ across nodes")
    }
}
