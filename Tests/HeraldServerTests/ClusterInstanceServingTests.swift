import Foundation
import HeraldTestSupport
import Testing

/// Instance channels across a real cluster (issue 15, docs/cluster.md "Instance
/// channels"): `declare` is exclusive over every node, and a removal (by `remove`, by the
/// owner leaving, or by its node dying) tells the exact subscribers on every node and
/// clears the channel's state, history and `seq` in Redis.
@Suite(.enabled(if: TestRedis.isAvailable, "needs Debian's redis-server"), .serialized)
struct ClusterInstanceServingTests {
    private static let timeoutMs = 1_000

    private func cluster(_ redis: TestRedis) throws -> [DaemonProcess] { try ClusterTestNodes.three(redis) }
    private func client(_ node: DaemonProcess) throws -> (TestClient, String) { try ClusterTestNodes.client(node) }
    private func ok(_ client: TestClient, _ line: String, _ op: String) throws { try ClusterTestNodes.ok(client, line, op) }

    @Test func aDeclareIsExclusiveOnEveryNode() throws {
        let redis = try TestRedis()
        let nodes = try cluster(redis)
        let (owner, ownerID) = try client(nodes[0])
        try ok(owner, #"{"op":"declare","ch":"car.1"}"#, "declare")
        for rival in [try client(nodes[1]).0, try client(nodes[2]).0, try client(nodes[0]).0] {
            let answer = try rival.request(#"{"op":"declare","ch":"car.1","rid":7}"#)
            #expect(answer["error"] as? String == "conflict" && answer["rid"] as? Int == 7, "\(answer)")
            #expect((answer["message"] as? String ?? "").contains(ownerID), "names the owner: \(answer)")
            #expect(try rival.request(#"{"op":"ping"}"#)["pong"] != nil, "the connection reads on")
        }
        try ok(owner, #"{"op":"declare","ch":"car.1"}"#, "declare")
    }

    @Test func aRemoveReachesExactSubscribersOnEveryNodeAfterEarlierEventsAndClearsTheChannel() throws {
        let redis = try TestRedis()
        let nodes = try cluster(redis)
        let (owner, _) = try client(nodes[0])
        try ok(owner, #"{"op":"declare","ch":"car.1"}"#, "declare")
        let (near, _) = try client(nodes[0])
        let (far, _) = try client(nodes[1])
        let (third, _) = try client(nodes[2])
        try ok(near, #"{"op":"sub","ch":"car.1","sub":"near"}"#, "sub")
        try ok(far, #"{"op":"sub","ch":"car.1","sub":"exact"}"#, "sub")
        try ok(far, #"{"op":"sub","ch":"car.*","sub":"wild"}"#, "sub")
        try ok(third, #"{"op":"sub","ch":"car.1","sub":"exact"}"#, "sub")
        #expect(try owner.request(#"{"op":"set","ch":"car.1","value":5,"rid":1}"#)["ok"] as? String == "set")
        owner.send(#"{"op":"pub","ch":"car.1","data":"last"}"#)
        try ok(owner, #"{"op":"remove","ch":"car.1"}"#, "remove")

        for (subscriber, name) in [(near, "near"), (third, "exact")] {
            #expect(try lastEvents(subscriber) == ["car.1 set", "car.1 last", "removed \(name)"])
        }
        let seen = try (0..<5).map { _ in try far.frame() }.map(describe)
        #expect(seen.filter { $0.hasSuffix("exact") || $0 == "removed exact" }
            == ["car.1 set exact", "car.1 last exact", "removed exact"], "\(seen)")
        #expect(seen.filter { $0.hasSuffix("wild") } == ["car.1 set wild", "car.1 last wild"], "\(seen)")

        let got = try third.request(#"{"op":"get","ch":"car.1"}"#)
        #expect(got["rev"] as? Int == 0 && got["value"] is NSNull, "the retained value went with the channel: \(got)")
        let (next, _) = try client(nodes[2])
        try ok(next, #"{"op":"declare","ch":"car.1"}"#, "declare")
        let receipt = try next.request(#"{"op":"pub","ch":"car.1","data":1,"rid":2}"#)
        #expect(receipt["seq"] as? Int == 1, "a channel declared again starts at seq 1: \(receipt)")
        let event = try far.frame()
        #expect(event["sub"] as? String == "wild" && event["seq"] as? Int == 1, "the wildcard stays: \(event)")
    }

    @Test func anOwnersDisconnectAndItsNodesDeathRemoveItsChannelsEverywhere() throws {
        let redis = try TestRedis()
        let nodes = try cluster(redis)
        let (watcher, _) = try client(nodes[0])
        let (owner, _) = try client(nodes[2])
        try ok(owner, #"{"op":"declare","ch":"room.a"}"#, "declare")
        try ok(watcher, #"{"op":"sub","ch":"room.a","sub":"a"}"#, "sub")
        owner.closeNow()
        #expect(try watcher.frame()["removed"] as? String == "room.a", "the owner's disconnect")

        let (dying, _) = try client(nodes[2])
        for name in ["b", "c", "d"] { try ok(dying, #"{"op":"declare","ch":"room.\#(name)"}"#, "declare") }
        try ok(watcher, #"{"op":"sub","ch":"room.b","sub":"b"}"#, "sub")
        try ok(watcher, #"{"op":"sub","ch":"room.c","sub":"c"}"#, "sub")
        let (rival, _) = try client(nodes[1])
        #expect(try rival.request(#"{"op":"declare","ch":"room.d"}"#)["error"] as? String == "conflict")
        nodes[2].signal(SIGKILL)
        let timeout = Double(Self.timeoutMs) / 1000 + 4
        let removed = try [watcher.frame(timeout: timeout), watcher.frame(timeout: 2)].compactMap { $0["removed"] as? String }
        #expect(removed.sorted() == ["room.b", "room.c"], "the dead node's channels: \(removed)")
        try ok(rival, #"{"op":"declare","ch":"room.d"}"#, "declare")
    }

    /// A `remove` acknowledged by a primary that died before its replica had it leaves
    /// Redis naming the old owner. After the node reconnects it makes Redis's record of its
    /// channels exactly what it holds, so the channel can be declared again.
    @Test func aRemovalLostWithRedisIsClearedWhenTheNodeReconnects() throws {
        let redis = try TestRedis()
        let nodes = try cluster(redis)
        let (owner, ownerID) = try client(nodes[0])
        try ok(owner, #"{"op":"declare","ch":"inst.lost"}"#, "declare")
        try ok(owner, #"{"op":"remove","ch":"inst.lost"}"#, "remove")
        let id = Int(ownerID.dropFirst()) ?? 0
        try redis.command("SET", "herald:own:inst.lost", String(id))
        try redis.command("SADD", "herald:no:\(id >> 32)", "inst.lost")
        let (other, _) = try client(nodes[1])
        #expect(try other.request(#"{"op":"declare","ch":"inst.lost"}"#)["error"] as? String == "conflict",
                "the lost removal: Redis still names the old owner")
        try redis.command("CLIENT", "KILL", "TYPE", "normal")
        try redis.command("CLIENT", "KILL", "TYPE", "pubsub")
        var answer: [String: Any] = [:]
        for attempt in 0..<50 {
            answer = try other.request(#"{"op":"declare","ch":"inst.lost","rid":\#(attempt)}"#)
            if answer["ok"] != nil { break }
            usleep(100_000)
        }
        #expect(answer["ok"] as? String == "declare", "cleared once the owner's node reconnected: \(answer)")
    }

    @Test func aTeardownOfThousandsOfChannelsIsCompleteOnEveryNode() throws {
        let redis = try TestRedis()
        let nodes = try cluster(redis)
        let (owner, _) = try client(nodes[1])
        let count = 3_000
        for at in 0..<count { owner.send(#"{"op":"declare","ch":"many.\#(at)"}"#) }
        for _ in 0..<count { _ = try owner.frame() }
        let (watcher, _) = try client(nodes[0])
        try ok(watcher, #"{"op":"sub","ch":"many.2999","sub":"last"}"#, "sub")
        try ok(owner, #"{"op":"remove","all":true}"#, "remove")
        #expect(try watcher.frame(timeout: 10)["removed"] as? String == "many.2999")
        let (next, _) = try client(nodes[2])
        for at in [0, 1_500, 2_999] { try ok(next, #"{"op":"declare","ch":"many.\#(at)"}"#, "declare") }
    }

    /// The next three frames as `CH DATA` or `removed SUB`.
    private func lastEvents(_ client: TestClient) throws -> [String] {
        try (0..<3).map { _ in
            let frame = try client.frame()
            if let removed = frame["removed"] as? String { return "removed \(frame["sub"] as? String ?? removed)" }
            return describe(frame).components(separatedBy: " ").prefix(2).joined(separator: " ")
        }
    }

    /// `CH DATA SUB` for an event (`set` for a change event), `removed SUB` for a removal.
    private func describe(_ frame: [String: Any]) -> String {
        let sub = frame["sub"] as? String ?? "?"
        if frame["removed"] != nil { return "removed \(sub)" }
        let data: String
        if let kind = frame["kind"] as? String {
            data = kind
        } else {
            data = frame["data"].map { "\($0)" } ?? "none"
        }
        return "\(frame["event"] as? String ?? "\(frame)") \(data) \(sub)"
    }
}
