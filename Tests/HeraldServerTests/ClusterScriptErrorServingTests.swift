import Foundation
import HeraldTestSupport
import Testing

extension TestRedis {
    /// One command over a socket (`RedisCommandLine`), not through `redis-cli`: a test that
    /// holds client connections spawns no process in the middle of them.
    fileprivate func run(_ arguments: String...) -> RedisCommandLine.Reply? {
        RedisCommandLine.run(port: port, arguments)
    }
}

/// A Redis that answers a script call with an error (issue 29, "Bad input and faults"): the
/// op gets `unavailable`, the node lives on, and ops after the cause is gone succeed with the
/// channel's `seq` going on where it was. NOSCRIPT (the scripts are loaded again), OOM
/// (`maxmemory` reached) and BUSY (another client's script runs past the threshold).
@Suite(.enabled(if: TestRedis.isAvailable, "needs Debian's redis-server"), .serialized)
struct ClusterScriptErrorServingTests {
    /// Two nodes on `redis`, a subscriber to `e.>` on the second.
    private func cluster(_ redis: TestRedis) throws -> (publisher: TestClient, subscriber: TestClient, nodes: [DaemonProcess]) {
        let nodes = try ["n0", "n1"].map { try ClusterTestNodes.node(redis, $0, timeoutMs: 5_000) }
        let publisher = try nodes[0].client()
        let subscriber = try nodes[1].client()
        try ClusterTestNodes.ok(subscriber, #"{"op":"sub","ch":"e.>"}"#, "sub")
        return (publisher, subscriber, nodes)
    }

    /// Publishes with a receipt until one is `ok` (at most `seconds`); returns the answers.
    private func publishUntilOK(_ client: TestClient, rid: inout Int, seconds: Double = 8) throws -> [[String: Any]] {
        var answers: [[String: Any]] = []
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            rid += 1
            let answer = try client.request(#"{"op":"pub","ch":"e.x","data":\#(rid),"rid":\#(rid)}"#)
            answers.append(answer)
            if answer["ok"] as? String == "pub" { return answers }
            Thread.sleep(forTimeInterval: 0.05)
        }
        return answers
    }

    /// The subscriber's events up to the one carrying `data`, their `seq`s.
    private func seqs(_ subscriber: TestClient, until data: Int) throws -> [Int] {
        var seqs: [Int] = []
        while true {
            let frame = try subscriber.frame()
            guard frame["event"] != nil else { continue }
            seqs.append(frame["seq"] as? Int ?? -1)
            if frame["data"] as? Int == data { return seqs }
        }
    }

    @Test(.oneRedisOnly) func scriptsFlushedFromRedisGiveUnavailableThenAreLoadedAgain() throws {
        let redis = try TestRedis()
        let (publisher, subscriber, nodes) = try cluster(redis)
        var rid = 0
        #expect(try publishUntilOK(publisher, rid: &rid).last?["seq"] as? Int == 1)
        #expect(redis.run("SCRIPT", "FLUSH") == .text("OK"))
        let answers = try publishUntilOK(publisher, rid: &rid)
        #expect(answers.first?["error"] as? String == "unavailable", "the call that met NOSCRIPT: \(answers.first ?? [:])")
        #expect(answers.last?["ok"] as? String == "pub", "the scripts were loaded again: \(answers.last ?? [:])")
        #expect(answers.last?["seq"] as? Int == 2, "a refused publish took no seq")
        #expect(try seqs(subscriber, until: rid) == [1, 2], "every acknowledged event delivered, nothing else")
        try ClusterTestNodes.ok(publisher, #"{"op":"set","ch":"e.state","value":1}"#, "set")
        #expect(nodes.allSatisfy { $0.log.joined().contains("declared down") == false })
    }

    @Test(.oneRedisOnly) func redisOutOfMemoryGivesUnavailableUntilItHasRoomAgain() throws {
        let redis = try TestRedis()
        let (publisher, subscriber, nodes) = try cluster(redis)
        // The nodes must outlive the clients: released early, their daemons stop mid-test.
        defer { withExtendedLifetime(nodes) {} }
        var rid = 0
        #expect(try publishUntilOK(publisher, rid: &rid).last?["seq"] as? Int == 1)
        #expect(redis.run("CONFIG", "SET", "maxmemory-policy", "noeviction") == .text("OK"))
        #expect(redis.run("CONFIG", "SET", "maxmemory", "1") == .text("OK"))
        rid += 1
        let refused = try publisher.request(#"{"op":"pub","ch":"e.x","data":\#(rid),"rid":\#(rid)}"#)
        #expect(refused["error"] as? String == "unavailable", "\(refused)")
        #expect((refused["message"] as? String ?? "").contains("OOM"), "the cause is named: \(refused)")
        let set = try publisher.request(#"{"op":"set","ch":"e.state","value":1}"#)
        #expect(set["error"] as? String == "unavailable", "\(set)")
        #expect(redis.run("CONFIG", "SET", "maxmemory", "0") == .text("OK"))
        let answers = try publishUntilOK(publisher, rid: &rid)
        #expect(answers.last?["seq"] as? Int == 2, "\(answers)")
        #expect(try seqs(subscriber, until: rid) == [1, 2])
    }

    @Test(.oneRedisOnly) func anotherClientsLongScriptGivesUnavailableUntilItIsKilled() throws {
        let redis = try TestRedis()
        let (publisher, subscriber, nodes) = try cluster(redis)
        // The nodes must outlive the clients: released early, their daemons stop mid-test.
        defer { withExtendedLifetime(nodes) {} }
        var rid = 0
        #expect(try publishUntilOK(publisher, rid: &rid).last?["seq"] as? Int == 1)
        #expect(redis.run("CONFIG", "SET", "busy-reply-threshold", "100") == .text("OK"))
        // The script runs on in Redis after its connection gives up waiting (0.4 s).
        _ = RedisCommandLine.run(port: redis.port, ["EVAL", "local i = 0 while true do i = i + 1 end", "0"], timeout: 0.4)
        rid += 1
        let refused = try publisher.request(#"{"op":"pub","ch":"e.x","data":\#(rid),"rid":\#(rid)}"#)
        #expect(refused["error"] as? String == "unavailable", "\(refused)")
        #expect((refused["message"] as? String ?? "").contains("BUSY"), "the cause is named: \(refused)")
        #expect(redis.run("SCRIPT", "KILL") == .text("OK"))
        let answers = try publishUntilOK(publisher, rid: &rid)
        #expect(answers.last?["seq"] as? Int == 2, "\(answers)")
        #expect(try seqs(subscriber, until: rid) == [1, 2])
    }
}
