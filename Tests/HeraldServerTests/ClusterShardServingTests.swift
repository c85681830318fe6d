import Foundation
import HeraldTestSupport
import Testing
@testable import HeraldServer

/// Several Redis primaries (issue 33): three real Redis servers as shards and three real
/// nodes. A channel's data lives on its shard; a shard that is down makes only its channels
/// `unavailable`; wildcard catch-ups gather every shard; a node with another shard list does
/// not start.
@Suite(.enabled(if: TestRedis.isAvailable, "needs Debian's redis-server"), .serialized)
struct ClusterShardServingTests {
    /// The shard list of a config.
    private func shardList(_ shards: [TestRedis]) -> String {
        shards.map { "\"redis://127.0.0.1:\($0.port)\"" }.joined(separator: ", ")
    }

    /// Nodes over `shards`, one loop each, declared down after 1 s.
    private func cluster(_ shards: [TestRedis], nodes: Int = 3, extra: String = "") throws -> [DaemonProcess] {
        try (0..<nodes).map { index in
            try DaemonProcess(config: "cluster: { shards: [\(shardList(shards))], node: \"n\(index)\", node_timeout_ms: 1000 }," + extra,
                              arguments: ["--workers", "1"])
        }
    }

    /// A channel named `stem.N` that lives on `shard` of `count`.
    private func channel(_ stem: String, onShard shard: Int, of count: Int = 3) -> String {
        let map = ShardMap(count: count)
        return (0...).lazy.map { "\(stem).\($0)" }.first { map.shard(of: Array($0.utf8)) == shard } ?? stem
    }

    private func ok(_ client: TestClient, _ line: String, _ op: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        try ClusterTestNodes.ok(client, line, op, sourceLocation: sourceLocation)
    }

    @Test func eachChannelsDataLivesOnItsShardAndEventsCrossNodesFromEveryShard() throws {
        let shards = try (0..<3).map { _ in try TestRedis() }
        let nodes = try cluster(shards)
        let names = (0..<3).map { channel("d", onShard: $0) }
        let subscriber = try TestClient(port: nodes[1].port)
        _ = try subscriber.frame()
        try ok(subscriber, #"{"op":"sub","ch":"d.*","sub":"w"}"#, "sub")
        let writer = try TestClient(port: nodes[0].port)
        _ = try writer.frame()
        for (index, name) in names.enumerated() {
            try ok(writer, #"{"op":"pub","ch":"\#(name)","data":\#(index),"rid":1}"#, "pub")
            try ok(writer, #"{"op":"set","ch":"\#(name)","value":\#(index * 10)}"#, "set")
        }
        var seen: [String: [Int]] = [:]
        for _ in 0..<6 {
            let event = try subscriber.frame()
            seen[event["event"] as? String ?? "?", default: []].append(event["seq"] as? Int ?? 0)
        }
        for name in names { #expect(seen[name] == [1, 2], "\(name): the pub then the set, seq 1 and 2, across nodes: \(seen) \(names)") }
        for (index, name) in names.enumerated() {
            #expect(try shards[index].command("HGET", "herald:m:" + name, "seq") == "2", "\(name)'s counter is on shard \(index)")
            for other in shards.indices where other != index {
                #expect(try shards[other].command("EXISTS", "herald:m:" + name) == "0", "\(name) has nothing on shard \(other)")
            }
        }
        let reader = try TestClient(port: nodes[2].port)
        _ = try reader.frame()
        let answer = try reader.request(#"{"op":"sub","ch":"d.*","current":true,"sub":"c"}"#)
        #expect(answer["ok"] as? String == "sub")
        let currents = try (0..<3).map { _ in try reader.frame() }
        #expect(currents.compactMap { $0["event"] as? String } == names.sorted(), "every shard's values, in name order: \(currents)")
        #expect(currents.compactMap { $0["value"] as? Int }.sorted() == [0, 10, 20])
        #expect(try shards[0].command("GET", "herald:shards").split(separator: ",").count == 3, "the first shard records the list")
    }

    @Test func aShardThatIsDownMakesOnlyItsChannelsUnavailableAndServesAgainWhenBack() throws {
        let shards = try (0..<3).map { _ in try TestRedis() }
        let nodes = try cluster(shards)
        let up = channel("k", onShard: 1)
        let down = channel("k", onShard: 2)
        let subscriber = try TestClient(port: nodes[1].port)
        _ = try subscriber.frame()
        try ok(subscriber, #"{"op":"sub","ch":"k.>","sub":"w"}"#, "sub")
        let writer = try TestClient(port: nodes[0].port)
        _ = try writer.frame()
        try ok(writer, #"{"op":"set","ch":"\#(down)","value":1}"#, "set")
        #expect(try subscriber.frame()["event"] as? String == down)
        shards[2].stop()
        var acknowledged = 0
        var refused = 0
        // Mid-traffic: the other shard's writes and events go on while this one is down.
        for n in 1...50 {
            let answer = try writer.request(#"{"op":"set","ch":"\#(up)","value":\#(n),"rid":\#(n)}"#)
            if answer["ok"] as? String == "set" { acknowledged += 1 }
            let lost = try writer.request(#"{"op":"pub","ch":"\#(down)","data":\#(n),"rid":\#(n)}"#)
            if lost["error"] as? String == "unavailable" { refused += 1 }
        }
        #expect(acknowledged == 50, "every write on a serving shard is acknowledged")
        #expect(refused == 50, "every publish on the down shard is unavailable")
        let events = try (0..<50).map { _ in try subscriber.frame() }
        #expect(events.allSatisfy { $0["event"] as? String == up }, "only the serving shard's events")
        #expect(events.compactMap { $0["value"] as? Int } == Array(1...50), "in order, each once")
        #expect(try writer.request(#"{"op":"get","ch":"\#(down)"}"#)["error"] as? String == "unavailable")
        #expect(try writer.request(#"{"op":"get","ch":"\#(up)"}"#)["value"] as? Int == 50)
        let late = try TestClient(port: nodes[2].port)
        _ = try late.frame()
        #expect(try late.request(#"{"op":"sub","ch":"\#(down)","current":true}"#)["error"] as? String == "unavailable",
                "a catch-up of the down shard's channel is unavailable")
        #expect(try late.request(#"{"op":"sub","ch":"k.*","current":true,"sub":"p"}"#)["error"] as? String == "unavailable",
                "a wildcard catch-up needing the down shard is unavailable, not silently partial")
        try shards[2].restart()
        var back: [String: Any] = [:]
        for attempt in 0..<100 {
            back = try writer.request(#"{"op":"set","ch":"\#(down)","value":2,"rid":"b\#(attempt)"}"#)
            if back["ok"] as? String == "set" { break }
            Thread.sleep(forTimeInterval: 0.1)
        }
        #expect(back["ok"] as? String == "set" && back["rev"] as? Int == 2, "served again, its data kept: \(back)")
        let resumed = try subscriber.frame()
        #expect(resumed["event"] as? String == down && resumed["value"] as? Int == 2, "\(resumed)")
    }

    /// An event its channel's shard ran under a lock stays suppressed on a node that hears
    /// the unlock (through shard 0) first: the subscriber's node reaches shard 1 through a
    /// proxy that holds its bytes, so the event and the unlock arrive in the wrong order.
    /// The unlock applies there only after its fence through shard 1 came back (behind the
    /// event), and its `ok` waits for that.
    @Test func anUnlockDoesNotOvertakeAnEventItsChannelsShardRanUnderTheLock() throws {
        let shards = try (0..<2).map { _ in try TestRedis() }
        let proxy = try StallingProxy(upstream: shards[1].port)
        let list = "\"redis://127.0.0.1:\(shards[0].port)\", \"redis://127.0.0.1:\(proxy.port)\""
        let config = { (name: String) in "cluster: { shards: [\(list)], node: \"\(name)\", node_timeout_ms: 3000 }," }
        let near = try DaemonProcess(config: config("near"), arguments: ["--workers", "1"])
        let locker = try TestClient(port: near.port)
        _ = try locker.frame()
        try ok(locker, #"{"op":"sub","ch":"warm","sub":"w"}"#, "sub")
        let firstOfFar = proxy.connectionCount
        let far = try DaemonProcess(config: config("far"), arguments: ["--workers", "1"])
        let subscriber = try TestClient(port: far.port)
        _ = try subscriber.frame()
        let name = channel("gate", onShard: 1, of: 2)
        try ok(subscriber, #"{"op":"sub","ch":"\#(name)","sub":"s"}"#, "sub")
        try ok(locker, #"{"op":"lock","ch":"\#(name)"}"#, "lock")
        proxy.stall(connectionsFrom: firstOfFar)
        try ok(locker, #"{"op":"pub","ch":"\#(name)","data":1,"rid":1}"#, "pub")
        locker.send(#"{"op":"unlock","ch":"\#(name)","rid":2}"#)
        #expect(throws: (any Error).self, "the unlock waits for the far node's fence") { _ = try locker.frame(timeout: 0.5) }
        proxy.resume()
        #expect(try locker.frame()["ok"] as? String == "unlock")
        try ok(locker, #"{"op":"pub","ch":"\#(name)","data":2,"rid":3}"#, "pub")
        let first = try subscriber.frame()
        #expect(first["data"] as? Int == 2, "the event published under the lock stayed suppressed: \(first)")
        withExtendedLifetime((near, far)) {}
    }

    @Test func queueGroupsAndInstanceChannelsWorkOnEveryShard() throws {
        let shards = try (0..<3).map { _ in try TestRedis() }
        let nodes = try cluster(shards)
        let members = try nodes.map { node -> TestClient in
            let client = try TestClient(port: node.port)
            _ = try client.frame()
            try ok(client, #"{"op":"sub","ch":"q.>","group":"workers"}"#, "sub")
            return client
        }
        let publisher = try TestClient(port: nodes[0].port)
        _ = try publisher.frame()
        for shard in 0..<3 {
            let name = channel("q", onShard: shard)
            for n in 0..<6 { try ok(publisher, #"{"op":"pub","ch":"\#(name)","data":\#(n),"rid":\#(n)}"#, "pub") }
        }
        var got = 0
        var perMember: [Int] = []
        for member in members {
            var mine = 0
            while (try? member.frame(timeout: 0.5)) != nil { mine += 1 }
            perMember.append(mine)
            got += mine
        }
        #expect(got == 18, "each event once in the group, whatever its shard: \(perMember)")
        #expect(perMember.allSatisfy { $0 == 6 }, "round robin on every shard: \(perMember)")
        let owned = channel("inst", onShard: 2)
        let (owner, _) = try ClusterTestNodes.client(nodes[0])
        try ok(owner, #"{"op":"declare","ch":"\#(owned)"}"#, "declare")
        try ok(owner, #"{"op":"set","ch":"\#(owned)","value":1}"#, "set")
        try ok(owner, #"{"op":"remove","ch":"\#(owned)"}"#, "remove")
        var cleared = "1"
        for _ in 0..<50 {
            cleared = try shards[2].command("EXISTS", "herald:m:" + owned)
            if cleared == "0" { break }
            Thread.sleep(forTimeInterval: 0.05)
        }
        #expect(cleared == "0", "a removed instance channel's data goes from its shard")
    }

    @Test func aNodeWithAnotherShardListRefusesToStartNamingBothLists() throws {
        let shards = try (0..<3).map { _ in try TestRedis() }
        let first = try cluster(Array(shards.prefix(2)), nodes: 1)
        do {
            _ = try cluster(shards, nodes: 1)
            Issue.record("a node with three shards started on a cluster of two")
        } catch {
            let text = "\(error)"
            #expect(text.contains("shard list differs") && text.contains(":\(shards[2].port)"), "names both lists: \(text)")
        }
        _ = first
    }
}
