import Foundation
import HeraldTestSupport
import Testing

/// Cluster mode's retained values and lists, `current` and `since` (issue 14,
/// docs/cluster.md): a real redis-server, three real heraldd nodes, clients on different
/// nodes.
@Suite(.enabled(if: TestRedis.isAvailable, "needs Debian's redis-server"), .serialized)
struct ClusterStateServingTests {
    private func cluster(_ redis: TestRedis, nodes: Int = 3, extra: String = "", workers: Int = 1) throws -> [DaemonProcess] {
        try (0..<nodes).map { index in
            try DaemonProcess(config: #"cluster: { redis: "redis://127.0.0.1:\#(redis.port)", node: "n\#(index)" },"# + extra,
                              arguments: ["--workers", String(workers)])
        }
    }

    /// With two loops per node the clients are spread over both (connections are dealt
    /// round robin), so the engine on the main loop serves the other loop's clients too.
    @Test(arguments: [1, 2])
    func ifRevCountersOnThreeNodesCountEverySuccessfulWriteExactly(workers: Int) throws {
        let redis = try TestRedis()
        let nodes = try cluster(redis, workers: workers)
        #expect(try nodes[0].client().request(#"{"op":"set","ch":"count","value":0}"#)["rev"] as? Int == 1)
        let rounds = 40
        let successes = LockedCounter()
        let failures = LockedCounter()
        DispatchQueue.concurrentPerform(iterations: 12) { worker in
            do {
                let client = try nodes[worker % 3].client()
                for _ in 0..<rounds {
                    while true {
                        let got = try client.request(#"{"op":"get","ch":"count"}"#)
                        guard let rev = got["rev"] as? Int, let value = got["value"] as? Int else {
                            failures.add()
                            return
                        }
                        let put = try client.request(#"{"op":"set","ch":"count","value":\#(value + 1),"if_rev":\#(rev)}"#)
                        if put["ok"] as? String == "set" {
                            successes.add()
                            break
                        }
                        guard put["error"] as? String == "conflict" else {
                            failures.add()
                            return
                        }
                    }
                }
            } catch {
                failures.add()
            }
        }
        #expect(failures.value == 0)
        #expect(successes.value == 12 * rounds)
        let final = try nodes[2].client().request(#"{"op":"get","ch":"count"}"#)
        #expect(final["value"] as? Int == 12 * rounds, "the value counts every successful write: \(final)")
        #expect(final["rev"] as? Int == 12 * rounds + 1, "rev +1 per change")
    }

    @Test(.oneRedisOnly) func noAcknowledgedStateWriteIsLostWhenRedisIsKilledMidTraffic() throws {
        let redis = try TestRedis()
        let nodes = try cluster(redis, nodes: 2)
        let writer = try nodes[0].client()
        let count = 2000
        // Pipelined: the node is working through them when Redis dies.
        for n in 0..<count { writer.send(#"{"op":"append","ch":"log","value":\#(n),"rid":\#(n)}"#) }
        // Redis dies once the first append was answered, with the rest on their way.
        let firstAnswer = try writer.frame()
        redis.stop()
        var acknowledged: [Int] = []
        var unavailable = 0
        if firstAnswer["ok"] as? String == "append", let rid = firstAnswer["rid"] as? Int { acknowledged.append(rid) }
        for _ in 1..<count {
            let answer = try writer.frame()
            if answer["ok"] as? String == "append", let rid = answer["rid"] as? Int {
                acknowledged.append(rid)
            } else if answer["error"] as? String == "unavailable" {
                unavailable += 1
            } else {
                Issue.record("unexpected answer \(answer)")
            }
        }
        #expect(!acknowledged.isEmpty && unavailable > 0, "killed mid-traffic: \(acknowledged.count) ok, \(unavailable) unavailable")
        try redis.restart()
        var list: [Int]?
        for _ in 0..<100 where list == nil {
            let answer = try nodes[1].client().request(#"{"op":"get","ch":"log"}"#)
            list = answer["value"] as? [Int]
            if list == nil { usleep(50_000) }
        }
        let kept = Set(list ?? [])
        #expect(acknowledged.allSatisfy { kept.contains($0) }, "every acknowledged append survived (appendfsync always)")
        // State ops are pipelined (at most 256 of a connection in Redis at once): those Redis
        // applied but could not answer before it died are there, unconfirmed, in order.
        #expect((list ?? []).count <= acknowledged.count + 256, "at most those in flight when Redis died are there unanswered")
        #expect(list == Array(0..<(list ?? []).count), "applied in request order, without a gap: \(list ?? [])")
    }

    @Test func stateChangesReachSubscribersOnOtherNodesWithOneSeqAndRevSequence() throws {
        let redis = try TestRedis()
        let nodes = try cluster(redis)
        let watcher = try nodes[1].client()
        #expect(try watcher.request(#"{"op":"sub","ch":"todo","sub":"t"}"#)["ok"] as? String == "sub")
        let writer = try nodes[0].client()
        #expect(try writer.request(#"{"op":"append","ch":"todo","value":"milk"}"#)["index"] as? Int == 0)
        #expect(try writer.request(#"{"op":"pub","ch":"todo","data":"note","rid":1}"#)["seq"] as? Int == 2)
        let splice = try nodes[2].client().request(#"{"op":"splice","ch":"todo","index":0,"remove":0,"insert":["eggs","tea"]}"#)
        #expect(splice["rev"] as? Int == 2, "\(splice)")
        #expect(try writer.request(#"{"op":"assign","ch":"todo","index":1,"value":"coffee"}"#)["rev"] as? Int == 3)
        let got = try (0..<4).map { _ in try watcher.frame() }
        #expect(got.map { $0["seq"] as? Int } == [1, 2, 3, 4])
        #expect(got.map { $0["kind"] as? String } == ["index", nil, "splice", "index"])
        #expect(got[3]["value"] as? String == "coffee" && got[3]["index"] as? Int == 1)
        let list = try nodes[1].client().request(#"{"op":"get","ch":"todo"}"#)
        #expect(list["value"] as? [String] == ["eggs", "coffee", "milk"], "\(list)")
        #expect(list["ch"] as? String == "todo")
    }

    @Test func stateErrorsAreTheSingleNodesAndChangeNothing() throws {
        let redis = try TestRedis()
        let nodes = try cluster(redis, nodes: 2, extra: "max_list_length: 2,")
        let a = try nodes[0].client()
        let b = try nodes[1].client()
        #expect(try a.request(#"{"op":"set","ch":"v","value":{"x":1}}"#)["rev"] as? Int == 1)
        #expect(try b.request(#"{"op":"append","ch":"v","value":1}"#)["error"] as? String == "type")
        let conflict = try b.request(#"{"op":"set","ch":"v","value":2,"if_rev":0,"rid":"r"}"#)
        #expect(conflict["error"] as? String == "conflict" && conflict["rev"] as? Int == 1 && conflict["rid"] as? String == "r")
        #expect(try b.request(#"{"op":"assign","ch":"l","index":0,"value":1}"#)["error"] as? String == "range")
        #expect(try b.request(#"{"op":"touch","ch":"l"}"#)["error"] as? String == "not_found")
        #expect(try a.request(#"{"op":"set","ch":"l","value":[1,2]}"#)["rev"] as? Int == 1)
        #expect(try b.request(#"{"op":"append","ch":"l","value":3}"#)["error"] as? String == "limit")
        #expect(try a.request(#"{"op":"del","ch":"l"}"#)["rev"] as? Int == 2)
        let gone = try b.request(#"{"op":"get","ch":"l"}"#)
        #expect(gone["rev"] as? Int == 2 && gone["value"] is NSNull, "a tombstone keeps the rev: \(gone)")
        #expect(try b.request(#"{"op":"set","ch":"l","value":1,"if_rev":2}"#)["rev"] as? Int == 3)
        #expect(try a.request(#"{"op":"set","ch":"$sys.x","value":1}"#)["error"] as? String == "forbidden")
    }

    @Test(.oneRedisOnly) func everyNodeAppliesTheSameUsersAndAUsersRetainedBytesCountOverAllNodes() throws {
        let redis = try TestRedis()
        let users = """
            auth: { users: [
              { name: "app", token: "app-t", publish: { allow: ["app.>"] }, subscribe: { allow: ["app.>"] },
                limits: { retained_bytes: 300 } },
              { name: "dev", token: "dev-t" },
            ] },
            """
        let nodes = try cluster(redis, extra: users)
        let app = try (0..<3).map { index in
            let client = try nodes[index].client()
            #expect(try client.request(#"{"op":"hello","token":"app-t"}"#)["ok"] as? String == "hello")
            return client
        }
        let dev = try nodes[2].client()
        #expect(try dev.request(#"{"op":"hello","token":"dev-t"}"#)["ok"] as? String == "hello")
        #expect(try app[1].request(#"{"op":"sub","ch":"app.*","sub":"a"}"#)["ok"] as? String == "sub")
        #expect(try app[1].request(#"{"op":"sub","ch":"other"}"#)["error"] as? String == "forbidden")
        #expect(try app[0].request(#"{"op":"set","ch":"other","value":1}"#)["error"] as? String == "forbidden")
        #expect(try app[0].request(#"{"op":"get","ch":"other"}"#)["error"] as? String == "forbidden")
        #expect(try dev.request(#"{"op":"pub","ch":"app.news","data":"hi","rid":1}"#)["receivers"] as? Int == 1)
        #expect(try app[1].frame()["data"] as? String == "hi", "dev on node 2 reaches app on node 1")
        let big = String(repeating: "z", count: 200)
        #expect(try app[0].request(#"{"op":"set","ch":"app.one","value":"\#(big)"}"#)["ok"] as? String == "set")
        _ = try app[1].frame()
        let refused = try app[2].request(#"{"op":"set","ch":"app.two","value":"\#(big)"}"#)
        #expect(refused["error"] as? String == "limit", "the user's bytes on node 0 count on node 2: \(refused)")
        #expect(try dev.request(#"{"op":"set","ch":"app.two","value":"\#(big)"}"#)["ok"] as? String == "set",
                "another user is not charged for app's bytes")
        #expect(try app[2].request(#"{"op":"del","ch":"app.one"}"#)["ok"] as? String == "del")
        #expect(try app[2].request(#"{"op":"set","ch":"app.three","value":"\#(big)"}"#)["ok"] as? String == "set",
                "a del credits the user on every node")
    }

    @Test func currentAndSinceReadRedisSoAnyNodeCatchesUpAClient() throws {
        let redis = try TestRedis()
        let nodes = try cluster(redis)
        let writer = try nodes[0].client()
        #expect(try writer.request(#"{"op":"set","ch":"app.theme","value":"dark"}"#)["ok"] as? String == "set")
        #expect(try writer.request(#"{"op":"set","ch":"app.todo","value":["a"]}"#)["ok"] as? String == "set")
        for n in 0..<5 { writer.send(#"{"op":"pub","ch":"feed","data":\#(n)}"#) }
        #expect(try writer.request(#"{"op":"pub","ch":"feed","data":5,"rid":1}"#)["seq"] as? Int == 6)
        let reader = try nodes[2].client()
        let sub = try reader.request(#"{"op":"sub","ch":"app.*","current":true,"sub":"c"}"#)
        #expect(sub["ok"] as? String == "sub")
        let currents = try (0..<2).map { _ in try reader.frame() }
        #expect(currents.map { $0["event"] as? String } == ["app.theme", "app.todo"])
        #expect(currents.allSatisfy { $0["kind"] as? String == "current" && $0["rev"] as? Int == 1 })
        #expect(currents[1]["value"] as? [String] == ["a"])
        let since = try reader.request(#"{"op":"sub","ch":"feed","since":3,"sub":"f"}"#)
        #expect(since["recovered"] as? Bool == true, "\(since)")
        let replay = try (0..<3).map { _ in try reader.frame() }
        #expect(replay.map { $0["seq"] as? Int } == [4, 5, 6])
        #expect(replay.allSatisfy { $0["replay"] as? Bool == true })
        writer.send(#"{"op":"pub","ch":"feed","data":6}"#)
        let live = try reader.frame()
        #expect(live["seq"] as? Int == 7 && live["replay"] == nil, "then live: \(live)")
        let late = try nodes[1].client().request(#"{"op":"sub","ch":"feed","since":99}"#)
        #expect(late["recovered"] as? Bool == false)
    }

    /// Issue 29: state ops sent back to back are all in Redis at once (one set per round trip
    /// was all a connection got), and still answered in request order, an error the node
    /// answers at once and a request of another kind included.
    @Test func pipelinedStateOpsAreAnsweredInRequestOrder() throws {
        let redis = try TestRedis()
        let nodes = try cluster(redis, nodes: 2)
        let watcher = try nodes[1].client()
        #expect(try watcher.request(#"{"op":"sub","ch":"p.>"}"#)["ok"] as? String == "sub")
        let client = try nodes[0].client()
        let lines = [
            #"{"op":"set","ch":"p.a","value":1,"rid":1}"#,
            #"{"op":"set","ch":"p.a","value":2,"rid":2}"#,
            #"{"op":"set","ch":"p.a","rid":3}"#,
            #"{"op":"append","ch":"p.a","value":3,"rid":4}"#,
            #"{"op":"get","ch":"p.a","rid":5}"#,
            #"{"op":"ping","rid":6}"#,
            #"{"op":"set","ch":"p.b","value":[1],"rid":7}"#,
            #"{"op":"append","ch":"p.b","value":2,"rid":8}"#,
            #"{"op":"set","ch":"p.a","value":9,"if_rev":1,"rid":9}"#,
        ]
        client.send(lines.joined(separator: "\n"))
        let answers = try (1...9).map { _ in try client.frame() }
        #expect(answers.map { "\($0["rid"] ?? "-")" } == (1...9).map(String.init), "request order: \(answers)")
        #expect(answers[0]["rev"] as? Int == 1 && answers[1]["rev"] as? Int == 2)
        #expect(answers[2]["error"] as? String == "missing_field", "\(answers[2])")
        #expect(answers[3]["error"] as? String == "type", "\(answers[3])")
        #expect(answers[4]["value"] as? Int == 2, "a read sees the writes before it: \(answers[4])")
        #expect(answers[5]["pong"] != nil, "the ping waited for the state answers: \(answers[5])")
        #expect(answers[6]["rev"] as? Int == 1 && answers[7]["index"] as? Int == 1, "\(answers[6]) \(answers[7])")
        #expect(answers[8]["error"] as? String == "conflict", "\(answers[8])")
        let events = try (0..<4).map { _ in try watcher.frame() }
        #expect(events.map { $0["seq"] as? Int } == [1, 2, 1, 2], "the writes' events, once each: \(events)")
    }

    @Test(.oneRedisOnly) func historyBytesCapsTheWholeDataSetOldestFirstWhateverTheChannel() throws {
        let redis = try TestRedis()
        // Each channel's stream counts its own memory in Redis too (4,352 B, docs/cluster.md):
        // the three streams' share plus 4,000 for the events.
        let nodes = try cluster(redis, nodes: 2, extra: "history: 100, history_bytes: \(3 * 4_352 + 4_000),")
        let publisher = try nodes[0].client()
        let payload = String(repeating: "x", count: 60)
        // One at a time, so each event is its own history run (a batch's events of one
        // channel are kept and evicted together).
        for n in 0..<90 { _ = try publisher.request(#"{"op":"pub","ch":"hb.\#(n % 3)","data":"\#(payload)","rid":\#(n)}"#) }
        #expect(try publisher.request(#"{"op":"pub","ch":"hb.0","data":"last","rid":1}"#)["seq"] as? Int == 31)
        let reader = try nodes[1].client()
        var kept = 0
        for channel in 0..<3 {
            let answer = try reader.request(#"{"op":"sub","ch":"hb.\#(channel)","since":0,"sub":"s\#(channel)"}"#)
            #expect(answer["recovered"] as? Bool == false, "the oldest events went")
            let last = channel == 0 ? 31 : 30
            var seqs: [Int] = []
            while seqs.last != last, let seq = try reader.frame()["seq"] as? Int { seqs.append(seq) }
            #expect(seqs == Array((last - seqs.count + 1)...last), "an unbroken run up to the latest: \(seqs)")
            kept += seqs.count
        }
        // Each event counts its record (about 90 bytes here) plus 40.
        #expect(kept >= 20 && kept <= 4000 / 120, "history_bytes bounds all channels together: \(kept) kept")
    }

    @Test func aReplayLargerThanHalfMaxPendingSendsTheNewestAndSaysNotRecovered() throws {
        let redis = try TestRedis()
        let nodes = try cluster(redis, nodes: 2, extra: "history: 1000, max_pending: 65536,")
        let publisher = try nodes[0].client()
        let payload = String(repeating: "y", count: 60)
        for _ in 0..<699 { publisher.send(#"{"op":"pub","ch":"big","data":"\#(payload)"}"#) }
        #expect(try publisher.request(#"{"op":"pub","ch":"big","data":"end","rid":1}"#)["seq"] as? Int == 700)
        let reader = try nodes[1].client()
        let answer = try reader.request(#"{"op":"sub","ch":"big","since":0}"#)
        #expect(answer["recovered"] as? Bool == false, "the replay did not fit: \(answer)")
        var seqs: [Int] = []
        while seqs.last != 700, let seq = try reader.frame()["seq"] as? Int { seqs.append(seq) }
        // Half of max_pending (32 KiB) holds about 340 records of about 95 bytes. History keeps
        // each batch a node sent as one run, and a loaded machine makes bigger batches, so
        // how many of those fit whole varies; never more than the bound, always the newest.
        #expect(seqs.count >= 1 && seqs.count < 500 && seqs == Array((701 - seqs.count)...700), "the newest run: \(seqs.count)")
    }

    @Test(arguments: [1, 2])
    func sinceIsGapFreeWhilePublishersOnOtherNodesKeepPublishing(workers: Int) throws {
        let redis = try TestRedis()
        let nodes = try cluster(redis, extra: "history: 1000,", workers: workers)
        let publisher = try nodes[0].client()
        let total = 400
        for n in 0..<100 { publisher.send(#"{"op":"pub","ch":"busy","data":\#(n)}"#) }
        #expect(try publisher.request(#"{"op":"pub","ch":"busy","data":"mark","rid":1}"#)["seq"] as? Int == 101)
        let reader = try nodes[1].client()
        // Sent without waiting: node 0 publishes them while node 1 reads the history.
        for n in 0..<(total - 101) { publisher.send(#"{"op":"pub","ch":"busy","data":\#(n)}"#) }
        let answer = try reader.request(#"{"op":"sub","ch":"busy","since":50}"#)
        #expect(answer["recovered"] as? Bool == true)
        let seqs = try (0..<(total - 50)).map { _ in try reader.frame()["seq"] as? Int }
        #expect(seqs == (51...total).map { $0 }, "each event once, in seq order, replay then live")
    }
}

/// A counter several threads add to.
private final class LockedCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0

    func add() {
        lock.lock()
        count += 1
        lock.unlock()
    }

    var value: Int {
        lock.lock()
        defer { lock.unlock() }
        return count
    }
}
