import Foundation
import HeraldTestSupport
import Testing

/// Fail-stop (issue 31, docs/cluster.md "Failover and fail-stop"): a node the cluster
/// declared down while it ran tells every client `node_reset`, closes them, and joins again
/// under a new index; nothing of its old incarnation is held twice or held without its
/// holder knowing.
@Suite(.enabled(if: TestRedis.isAvailable, "needs Debian's redis-server"), .serialized)
struct ClusterFailStopServingTests {
    private static let timeoutMs = 1_000

    private func node(_ redis: TestRedis, _ name: String, monitored: Bool = false) throws -> DaemonProcess {
        try DaemonProcess(config: (monitored ? "monitor_port: 0, " : "")
                          + #"cluster: { redis: "redis://127.0.0.1:\#(redis.port)", node: "\#(name)", node_timeout_ms: \#(Self.timeoutMs) },"#,
                          arguments: ["--workers", "1"])
    }

    /// The node's index as `{p}nodes` lists it now, or nil.
    private func index(of name: String, in redis: TestRedis) throws -> String? {
        let nodes = try redis.command("HGETALL", "herald:nodes").split(separator: "\n").map(String.init)
        return nodes.firstIndex(of: name).map { nodes[$0 - 1] }
    }

    private func waitUntil(_ seconds: Double, _ condition: () throws -> Bool) rethrows -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if try condition() { return true }
            Thread.sleep(forTimeInterval: 0.05)
        }
        return try condition()
    }

    /// The frames a client got until its connection closed: the last must be `node_reset`.
    private func expectReset(_ client: TestClient, _ what: String) {
        let (lines, closed) = client.linesUntilClosed(timeout: 10)
        #expect(closed, "\(what): the connection is closed")
        #expect(lines.last?.contains(#""error":"node_reset""#) == true, "\(what): told node_reset last: \(lines.suffix(3))")
    }

    /// The issue's third defect: O1 on node a declares `inst.z` and holds a lock; a is paused
    /// past the timeout; the reaper releases both; O2 on node b declares it. When a resumes
    /// it must not claim the channel again or keep O1 believing it holds anything.
    @Test func aNodePausedPastTheTimeoutResetsAndNeverHoldsTwice() throws {
        let redis = try TestRedis()
        let a = try node(redis, "a")
        let b = try node(redis, "b")
        let oldIndex = try #require(try index(of: "a", in: redis))
        let first = try a.client()
        #expect(try first.request(#"{"op":"declare","ch":"inst.z"}"#)["ok"] as? String == "declare")
        #expect(try first.request(#"{"op":"lock","ch":"room"}"#)["ok"] as? String == "lock")
        #expect(try first.request(#"{"op":"sub","ch":"talk","sub":"t"}"#)["ok"] as? String == "sub")
        a.signal(SIGSTOP)
        let second = try b.client()
        let declared = try waitUntil(8) {
            (try second.request(#"{"op":"declare","ch":"inst.z"}"#)["ok"] as? String) == "declare"
        }
        a.signal(SIGCONT)
        #expect(declared, "the reaper released the paused node's channel for b")
        expectReset(first, "the paused node's client")
        #expect(try waitUntil(8) { try index(of: "a", in: redis).map { $0 != oldIndex } ?? false },
                "a joined again under a new index")
        #expect(try redis.command("SISMEMBER", "herald:dead", oldIndex).contains("1"), "the old index stays dead")
        let owner = try redis.command("GET", "herald:own:inst.z")
        let again = try a.client()
        #expect(try waitUntil(8) { (try again.request(#"{"op":"declare","ch":"inst.z"}"#)["error"] as? String) == "conflict" },
                "a does not claim b's channel: \(owner)")
        #expect(try redis.command("GET", "herald:own:inst.z") == owner, "Redis still names b's owner")
        #expect(try redis.command("KEYS", "herald:lk:*").isEmpty, "the old incarnation's lock is gone and not re-registered")
    }

    /// What a client sends while its node is paused past the timeout is never answered as
    /// if the node still held anything: the chaos run saw a `remove` answered `count:1` by a
    /// node that had just resumed, 5 ms before it found itself declared down, while another
    /// node's client had owned the channel for 2 s. Lines are held while the node's
    /// liveness is in doubt (`ClusterLiveness`); here the answer to both is `node_reset`.
    @Test func linesSentDuringAPauseAreNotAnsweredBeforeTheNodeKnowsItWasDeclaredDown() throws {
        let redis = try TestRedis()
        let a = try node(redis, "a")
        let b = try node(redis, "b")
        let first = try a.client()
        #expect(try first.request(#"{"op":"declare","ch":"inst.q"}"#)["ok"] as? String == "declare")
        #expect(try first.request(#"{"op":"lock","ch":"hall"}"#)["ok"] as? String == "lock")
        a.signal(SIGSTOP)
        let second = try b.client()
        let declared = try waitUntil(8) {
            (try second.request(#"{"op":"declare","ch":"inst.q"}"#)["ok"] as? String) == "declare"
        }
        let owner = try redis.command("GET", "herald:own:inst.q")
        first.send(#"{"op":"unlock","ch":"hall"}"#)
        first.send(#"{"op":"remove","ch":"inst.q"}"#)
        a.signal(SIGCONT)
        #expect(declared, "the reaper released the paused node's channel for b")
        let (lines, closed) = first.linesUntilClosed(timeout: 10)
        #expect(closed, "the paused node's client is closed")
        #expect(!lines.contains { $0.contains(#""ok":"remove""#) || $0.contains(#""ok":"unlock""#) },
                "nothing the node no longer held was answered ok: \(lines)")
        #expect(lines.last?.contains(#""error":"node_reset""#) == true, "told node_reset: \(lines.suffix(3))")
        let ownerAfter = try redis.command("GET", "herald:own:inst.q")
        #expect(!owner.isEmpty && ownerAfter == owner, "Redis still names b's owner")
    }

    /// A node that was only slow (a pause shorter than the timeout) loses nothing: the lines
    /// sent meanwhile are answered once a refresh confirms it, in order.
    @Test func linesSentDuringAShortPauseAreAnsweredAfterwards() throws {
        let redis = try TestRedis()
        let a = try node(redis, "a")
        let client = try a.client()
        #expect(try client.request(#"{"op":"declare","ch":"inst.s"}"#)["ok"] as? String == "declare")
        a.signal(SIGSTOP)
        Thread.sleep(forTimeInterval: 0.5)
        client.send(#"{"op":"pub","ch":"inst.s","data":1,"rid":1}"#)
        client.send(#"{"op":"remove","ch":"inst.s"}"#)
        a.signal(SIGCONT)
        let published = try client.frame(timeout: 5)
        let removed = try client.frame(timeout: 5)
        #expect(published["ok"] as? String == "pub" && removed["ok"] as? String == "remove", "\(published) \(removed)")
    }

    /// A lapse no reaper saw (the liveness key expired, here deleted with the node's
    /// interest, as a snapshot taken in the gap would have missed it): the node cannot know
    /// what the others did meanwhile, so it resets too.
    @Test func aNodeWhoseLivenessLapsedStartsANewIncarnation() throws {
        let redis = try TestRedis()
        let daemon = try node(redis, "n0", monitored: true)
        let listener = try daemon.client()
        #expect(try listener.request(#"{"op":"sub","ch":"talk","sub":"t"}"#)["ok"] as? String == "sub")
        let oldIndex = try #require(try index(of: "n0", in: redis))
        // Two refresh periods: one has found the key in place since the node got ready.
        Thread.sleep(forTimeInterval: Double(Self.timeoutMs) / 1000)
        _ = try redis.command("DEL", "herald:alive:" + oldIndex, "herald:i:" + oldIndex)
        expectReset(listener, "the lapsed node's client")
        #expect(try waitUntil(8) { try index(of: "n0", in: redis).map { $0 != oldIndex } ?? false }, "joined under a new index")
        let next = try TestClient(port: daemon.port)
        let welcome = try next.frame()
        let client = (welcome["info"] as? [String: Any])?["client"] as? String ?? ""
        let newIndex = try #require(try index(of: "n0", in: redis))
        #expect(client == "c" + String((Int(newIndex) ?? 0) << 32 | 1), "ids carry the new index: \(welcome)")
        #expect(try waitUntil(8) { (try next.request(#"{"op":"sub","ch":"talk","sub":"t"}"#)["ok"] as? String) == "sub" })
        #expect(try waitUntil(8) { try redis.command("SMEMBERS", "herald:i:" + newIndex).contains("talk") },
                "the new incarnation registers the new client's interest")
        #expect(try redis.command("EXISTS", "herald:i:" + oldIndex) == "0", "nothing under the old index")
        let metrics = try HTTPTestClient.request("GET", "/metrics", port: try daemon.monitorPort()).body
        #expect(metrics.contains("herald_cluster_node_resets_total 1"), "the reset is counted")
    }

    /// A late write of a dead incarnation (Redis lists its index in `{p}dead`) is refused by
    /// the scripts, and the node that gets the refusal resets rather than go on serving.
    @Test func aScriptRefusesADeadIndexAndTheNodeResets() throws {
        let redis = try TestRedis()
        let daemon = try node(redis, "n0")
        let client = try daemon.client()
        #expect(try client.request(#"{"op":"sub","ch":"one","sub":"o"}"#)["ok"] as? String == "sub")
        let oldIndex = try #require(try index(of: "n0", in: redis))
        _ = try redis.command("SADD", "herald:dead", oldIndex)
        client.send(#"{"op":"lock","ch":"two","rid":1}"#)
        expectReset(client, "the refused node's client")
        #expect(try redis.command("KEYS", "herald:lk:*").isEmpty, "the refused lock was not recorded")
        #expect(try waitUntil(8) { try index(of: "n0", in: redis).map { $0 != oldIndex } ?? false }, "joined under a new index")
    }
}

/// The interest barrier (issue 31): a `sub` on a pattern new to its node waits for every
/// live node to apply it, but not for a node whose liveness key went unrefreshed for two
/// periods (stopped, not yet declared down).
@Suite(.enabled(if: TestRedis.isAvailable, "needs Debian's redis-server"), .serialized)
struct ClusterBarrierStalenessServingTests {
    @Test func aNewPatternDoesNotWaitForANodeThatStoppedRefreshing() throws {
        let redis = try TestRedis()
        let config = { (name: String) in
            try DaemonProcess(config: #"cluster: { redis: "redis://127.0.0.1:\#(redis.port)", node: "\#(name)", node_timeout_ms: 6000 },"#,
                              arguments: ["--workers", "1"])
        }
        let live = try config("live")
        let stopped = try config("stopped")
        let client = try live.client()
        #expect(try client.request(#"{"op":"sub","ch":"warm","sub":"w"}"#)["ok"] as? String == "sub")
        stopped.signal(SIGSTOP)
        defer { stopped.signal(SIGCONT) }
        // Two refresh periods (1 s each) and a reaper period: stale, still 3 s from its timeout.
        Thread.sleep(forTimeInterval: 3.2)
        let started = Date()
        #expect(try client.request(#"{"op":"sub","ch":"fresh.pattern","sub":"f"}"#)["ok"] as? String == "sub")
        let waited = Date().timeIntervalSince(started)
        #expect(waited < 1, "answered without waiting out the barrier for the stopped node: \(waited) s")
    }
}
