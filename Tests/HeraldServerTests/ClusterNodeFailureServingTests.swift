import Foundation
import HeraldTestSupport
import Testing

/// Node failures in a real cluster (issue 15, docs/cluster.md "Node liveness and the
/// reaper"): a node killed with SIGKILL is declared down once, within `node_timeout_ms`
/// and a reaper period, and the others stop routing to it; a node that stops cleanly is
/// declared down as `left`; a node that joins is announced up.
@Suite(.enabled(if: TestRedis.isAvailable, "needs Debian's redis-server"), .serialized)
struct ClusterNodeFailureServingTests {
    private static let timeoutMs = 1_000

    private func node(_ redis: TestRedis, _ name: String) throws -> DaemonProcess {
        try DaemonProcess(config: #"cluster: { redis: "redis://127.0.0.1:\#(redis.port)", node: "\#(name)", node_timeout_ms: \#(Self.timeoutMs) },"#,
                          arguments: ["--workers", "1"])
    }

    private func metric(_ daemon: DaemonProcess, _ name: String) throws -> String? {
        let body = try HTTPTestClient.request("GET", "/metrics", port: try daemon.monitorPort()).body
        return body.split(separator: "\n").first { $0.hasPrefix(name + " ") }.map { String($0.dropFirst(name.count + 1)) }
    }

    @Test func metricsCountLiveNodesAndTimeTheRedisRoundTrip() throws {
        let redis = try TestRedis()
        let watched = try DaemonProcess(config: #"monitor_port: 0, cluster: { redis: "redis://127.0.0.1:\#(redis.port)", node: "m", node_timeout_ms: \#(Self.timeoutMs) },"#,
                                        arguments: ["--workers", "1"])
        let others = try ["n1", "n2"].map { try node(redis, $0) }
        let deadline = Date().addingTimeInterval(5)
        while try metric(watched, "herald_cluster_nodes") != "3" || metric(watched, "herald_cluster_redis_rtt_seconds") == "0",
              Date() < deadline {
            Thread.sleep(forTimeInterval: 0.1)
        }
        #expect(try metric(watched, "herald_cluster_nodes") == "3")
        #expect(try metric(watched, "herald_cluster_ready") == "1")
        let rtt = try metric(watched, "herald_cluster_redis_rtt_seconds").flatMap(Double.init) ?? -1
        #expect(rtt > 0 && rtt < 1, "a loopback round trip: \(rtt) s")
        #expect(try metric(watched, "herald_cluster_pending_ops").flatMap(Int.init) ?? -1 >= 0)
        // Backpressure (issue 29): what the command link has outstanding, what is paused.
        #expect(try metric(watched, "herald_cluster_outstanding_ops").flatMap(Int.init) ?? -1 >= 0)
        #expect(try metric(watched, "herald_cluster_outstanding_bytes").flatMap(Int.init) ?? -1 >= 0)
        #expect(try metric(watched, "herald_cluster_paused_connections") == "0")
        others[1].signal(SIGKILL)
        let down = Date().addingTimeInterval(Double(Self.timeoutMs) / 1000 + 4)
        while try metric(watched, "herald_cluster_nodes") != "2" && Date() < down { Thread.sleep(forTimeInterval: 0.1) }
        #expect(try metric(watched, "herald_cluster_nodes") == "2", "the killed node is no longer counted")
        redis.stop()
        let lost = Date().addingTimeInterval(5)
        while try metric(watched, "herald_cluster_ready") != "0" && Date() < lost { Thread.sleep(forTimeInterval: 0.1) }
        #expect(try metric(watched, "herald_cluster_ready") == "0", "not ready without Redis")
    }

    @Test func aReplyWaitingForADeadRequestersNodeIsAnsweredNotDelivered() throws {
        let redis = try TestRedis()
        let requesterNode = try node(redis, "r")
        let responderNode = try node(redis, "s")
        let responder = try responderNode.client()
        #expect(try responder.request(#"{"op":"sub","ch":"work","sub":"w"}"#)["ok"] as? String == "sub")
        let requester = try requesterNode.client()
        requester.send(#"{"op":"req","ch":"work","data":1,"timeout_ms":60000,"rid":1}"#)
        let request = try responder.frame()
        let token = request["reply"] as? String ?? ""
        #expect(token.count == 32, "\(request)")
        requesterNode.signal(SIGSTOP)
        defer { requesterNode.signal(SIGCONT) }
        let started = Date()
        let answer = try responder.request(#"{"op":"reply","to":"\#(token)","data":2,"rid":9}"#)
        let waited = Date().timeIntervalSince(started)
        #expect(answer["ok"] as? String == "reply" && answer["delivered"] as? Bool == false, "\(answer)")
        #expect(waited < Double(Self.timeoutMs) / 1000 + 3, "answered once the node was declared down: \(waited) s")
    }

    private func nodeEvent(_ watcher: TestClient, timeout: Double) throws -> (event: String, name: String, reason: String?, reporter: String) {
        let frame = try watcher.frame(timeout: timeout)
        let data = frame["data"] as? [String: Any] ?? [:]
        return (frame["event"] as? String ?? "\(frame)", data["name"] as? String ?? "", data["reason"] as? String,
                data["node"] as? String ?? "")
    }

    @Test func aKilledNodeIsDeclaredDownOnceAndNoLongerRoutedTo() throws {
        let redis = try TestRedis()
        let nodes = try ["n0", "n1", "n2"].map { try node(redis, $0) }
        let watcher = try nodes[0].client()
        #expect(try watcher.request(#"{"op":"sub","ch":"$sys.node.>","sub":"nodes"}"#)["ok"] as? String == "sub")
        let listener = try nodes[2].client()
        #expect(try listener.request(#"{"op":"sub","ch":"talk","sub":"t"}"#)["ok"] as? String == "sub")
        let publisher = try nodes[1].client()
        #expect(try publisher.request(#"{"op":"pub","ch":"talk","rid":1}"#)["receivers"] as? Int == 1)

        let killedAt = Date()
        nodes[2].signal(SIGKILL)
        // A node's `up` may still be on its way when the watcher subscribed (a loaded machine).
        var down = try nodeEvent(watcher, timeout: Double(Self.timeoutMs) / 1000 + 3)
        while down.event == "$sys.node.up" { down = try nodeEvent(watcher, timeout: Double(Self.timeoutMs) / 1000 + 3) }
        let detection = Date().timeIntervalSince(killedAt)
        #expect(down.event == "$sys.node.down" && down.name == "n2" && down.reason == "timeout", "\(down)")
        #expect(["n0", "n1"].contains(down.reporter), "reported by a live node: \(down.reporter)")
        #expect(detection < Double(Self.timeoutMs) / 1000 + 2, "declared down after \(detection) s")
        #expect(throws: (any Error).self, "declared down once, though every node runs the reaper") {
            _ = try watcher.frame(timeout: 2.5)
        }
        #expect(try publisher.request(#"{"op":"pub","ch":"talk","rid":2}"#)["receivers"] as? Int == 0,
                "the dead node's interest is gone from the routing table")
    }

    @Test func aJoiningNodeIsAnnouncedUpAndACleanStopIsDeclaredLeft() throws {
        let redis = try TestRedis()
        let first = try node(redis, "a")
        let watcher = try first.client()
        #expect(try watcher.request(#"{"op":"sub","ch":"$sys.node.>","sub":"nodes"}"#)["ok"] as? String == "sub")
        let second = try node(redis, "b")
        let up = try nodeEvent(watcher, timeout: 10)
        #expect(up.event == "$sys.node.up" && up.name == "b" && up.reason == nil && up.reporter == "b", "\(up)")
        let listener = try second.client()
        #expect(try listener.request(#"{"op":"sub","ch":"talk","sub":"t"}"#)["ok"] as? String == "sub")
        second.signal(SIGTERM)
        #expect(second.waitForExit(seconds: 10) != nil)
        let down = try nodeEvent(watcher, timeout: Double(Self.timeoutMs) / 1000 + 3)
        #expect(down.event == "$sys.node.down" && down.name == "b" && down.reason == "left" && down.reporter == "a", "\(down)")
        #expect(try watcher.request(#"{"op":"pub","ch":"talk","rid":1}"#)["receivers"] as? Int == 0)
    }
}
