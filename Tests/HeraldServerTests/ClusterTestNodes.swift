import Foundation
import HeraldTestSupport
import Testing

/// What the cluster suites share: real nodes on one test Redis, clients that know their
/// id, and the usual `ok` check.
enum ClusterTestNodes {
    /// A node named `name` on `redis`, one loop, declared down after `timeoutMs` of silence.
    static func node(_ redis: TestRedis, _ name: String, timeoutMs: Int = 1_000) throws -> DaemonProcess {
        try DaemonProcess(config: #"cluster: { redis: "redis://127.0.0.1:\#(redis.port)", node: "\#(name)", node_timeout_ms: \#(timeoutMs) },"#,
                          arguments: ["--workers", "1"])
    }

    /// Nodes `n0`, `n1`, `n2`.
    static func three(_ redis: TestRedis) throws -> [DaemonProcess] {
        try ["n0", "n1", "n2"].map { try node(redis, $0) }
    }

    /// A client and its id (`cN`), from the `info` frame.
    static func client(_ node: DaemonProcess) throws -> (TestClient, String) {
        let client = try TestClient(port: node.port)
        let id = (try client.frame()["info"] as? [String: Any])?["client"] as? String ?? ""
        return (client, id)
    }

    /// Sends `line` and expects `{"ok":op,…}`.
    static func ok(_ client: TestClient, _ line: String, _ op: String,
                   sourceLocation: SourceLocation = #_sourceLocation) throws {
        let answer = try client.request(line)
        #expect(answer["ok"] as? String == op, "\(line) → \(answer)", sourceLocation: sourceLocation)
    }
}
