import Foundation
import HeraldTestSupport
import Testing

/// Cluster mode with a real redis-server and three real heraldd nodes (issue 14,
/// docs/cluster.md): clients on different nodes.
@Suite(.enabled(if: TestRedis.isAvailable, "needs Debian's redis-server"), .serialized)
struct ClusterServingTests {
    /// Three nodes on one Redis; `--workers 1` (cluster mode needs it for now).
    private func cluster(_ redis: TestRedis, nodes: Int = 3) throws -> [DaemonProcess] {
        try (0..<nodes).map { index in
            try DaemonProcess(config: #"cluster: { redis: "redis://127.0.0.1:\#(redis.port)", node: "n\#(index)" },"#,
                              arguments: ["--workers", "1"])
        }
    }

    /// Subscribes and waits for the `ok` (which the interest barrier may hold briefly).
    private func subscribe(_ client: TestClient, _ fields: String) throws {
        let answer = try client.request(#"{"op":"sub",\#(fields)}"#)
        #expect(answer["ok"] as? String == "sub", "\(answer)")
    }

    private func events(_ client: TestClient, _ count: Int) throws -> [[String: Any]] {
        try (0..<count).map { _ in try client.frame() }
    }

    @Test func eventsCrossNodesOnceInOrderWithOneSeqPerChannel() throws {
        let redis = try TestRedis()
        let nodes = try cluster(redis)
        try withLogs(of: nodes) { try crossNodeOrder(nodes) }
    }

    private func crossNodeOrder(_ nodes: [DaemonProcess]) throws {
        let exact = try nodes[1].client()
        let wildcard = try nodes[2].client()
        try subscribe(exact, #""ch":"cars.1","sub":"e""#)
        try subscribe(wildcard, #""ch":"cars.*","sub":"w""#)
        let publisher = try nodes[0].client()
        let count = 300
        for n in 0..<count { publisher.send(#"{"op":"pub","ch":"cars.1","data":\#(n),"rid":\#(n)}"#) }
        let receipts = try events(publisher, count)
        #expect(receipts.compactMap { $0["seq"] as? Int } == Array(1...count), "one counter, +1 per event")
        #expect(receipts.allSatisfy { $0["receivers"] as? Int == 2 }, "two nodes have interest")
        for client in [exact, wildcard] {
            let got = try events(client, count)
            #expect(got.compactMap { $0["seq"] as? Int } == Array(1...count))
            #expect(got.compactMap { $0["data"] as? Int } == Array(0..<count), "publish order")
        }
    }

    @Test func publishersOnDifferentNodesShareTheChannelsSeqAndKeepTheirOwnOrder() throws {
        let redis = try TestRedis()
        let nodes = try cluster(redis)
        let subscriber = try nodes[1].client()
        try subscribe(subscriber, #""ch":"shared.x""#)
        let first = try nodes[0].client()
        let second = try nodes[2].client()
        let count = 200
        for n in 0..<count {
            first.send(#"{"op":"pub","ch":"shared.x","data":"a\#(n)"}"#)
            second.send(#"{"op":"pub","ch":"shared.x","data":"b\#(n)"}"#)
        }
        let got = try events(subscriber, 2 * count)
        #expect(got.compactMap { $0["seq"] as? Int } == Array(1...(2 * count)), "no gap, no duplicate")
        let data = got.compactMap { $0["data"] as? String }
        #expect(data.filter { $0.hasPrefix("a") } == (0..<count).map { "a\($0)" })
        #expect(data.filter { $0.hasPrefix("b") } == (0..<count).map { "b\($0)" })
    }

    @Test func anEventPublishedAfterASubscriptionsOkReachesItWhateverTheNode() throws {
        let redis = try TestRedis()
        let nodes = try cluster(redis)
        let publisher = try nodes[0].client()
        let subscriber = try nodes[2].client()
        for round in 0..<40 {
            try subscribe(subscriber, #""ch":"fresh.\#(round)","sub":"r\#(round)""#)
            let receipt = try publisher.request(#"{"op":"pub","ch":"fresh.\#(round)","data":\#(round),"rid":1}"#)
            #expect(receipt["receivers"] as? Int == 1, "round \(round): the new interest was routed at once")
            #expect(try subscriber.frame()["data"] as? Int == round)
        }
    }

    @Test func eventsGoOnlyWhereSomeoneListensAndEchoFalseHoldsAcrossTheRoundTrip() throws {
        let redis = try TestRedis()
        let nodes = try cluster(redis, nodes: 2)
        try withLogs(of: nodes) { try echoAndRouting(nodes) }
    }

    /// Runs `body`; when it throws, records every node's log with the error (a node that
    /// refused a connection once under the full parallel suite left nothing else to go on).
    private func withLogs(of nodes: [DaemonProcess], _ body: () throws -> Void) throws {
        do {
            try body()
        } catch {
            let logs: [String] = nodes.map { $0.log.joined(separator: "\n") }
            Issue.record("\(error); node logs:\n\(logs.joined(separator: "\n--\n"))")
            throw error
        }
    }

    private func echoAndRouting(_ nodes: [DaemonProcess]) throws {
        let quiet = try nodes[0].client()
        #expect(try quiet.request(#"{"op":"hello","echo":false}"#)["ok"] as? String == "hello")
        try subscribe(quiet, #""ch":"talk""#)
        let other = try nodes[1].client()
        try subscribe(other, #""ch":"talk""#)
        #expect(try quiet.request(#"{"op":"pub","ch":"nobody","rid":1}"#)["receivers"] as? Int == 0)
        #expect(try quiet.request(#"{"op":"pub","ch":"talk","data":1,"rid":2}"#)["receivers"] as? Int == 2)
        #expect(try other.frame()["data"] as? Int == 1)
        // Its own event (echo on) and the receipt come back from Redis on two connections,
        // in either order: read until the receipt.
        other.send(#"{"op":"pub","ch":"talk","data":2,"rid":3}"#)
        var receipt: [String: Any] = [:]
        for _ in 0..<3 where receipt["rid"] == nil {
            let frame = try other.frame()
            if frame["rid"] != nil { receipt = frame }
        }
        #expect(receipt["ok"] as? String == "pub", "\(receipt)")
        let next = try quiet.frame()
        #expect(next["data"] as? Int == 2, "its own event came back from Redis and was not echoed: \(next)")
    }

    @Test func redisKilledAndRestartedMidTrafficGivesUnavailableThenResumes() throws {
        let redis = try TestRedis()
        let nodes = try cluster(redis, nodes: 2)
        try withLogs(of: nodes) {
            let subscriber = try nodes[1].client()
            try subscribe(subscriber, #""ch":"r.x""#)
            let publisher = try nodes[0].client()
            #expect(try publisher.request(#"{"op":"pub","ch":"r.x","data":1,"rid":1}"#)["seq"] as? Int == 1)
            #expect(try subscriber.frame()["data"] as? Int == 1)
            redis.stop()
            var refused = false
            for attempt in 0..<50 where !refused {
                let answer = try publisher.request(#"{"op":"pub","ch":"r.x","data":2,"rid":"d\#(attempt)"}"#)
                refused = answer["error"] as? String == "unavailable"
                if !refused { usleep(20_000) }
            }
            #expect(refused, "a pub while Redis is down is unavailable, not queued or lost")
            try redis.restart()
            let resumed = try publishOnceServed(publisher, #""ch":"r.x","data":3"#)
            #expect(resumed["ok"] as? String == "pub", "service resumes after Redis is back: \(resumed)")
            #expect(resumed["seq"] as? Int == 2, "the seq survived (appendfsync always): \(resumed)")
            #expect(try subscriber.frame()["data"] as? Int == 3, "the other node's subscription still gets events")
        }
    }

    /// A Redis that comes back without its data (or a promoted replica that lacks the
    /// newest events) must not hand out a `seq` already delivered: each node raises the
    /// counters of its channels past what it delivered before publishing again, and a
    /// `since` from before the lost events is `recovered:false`.
    @Test(.oneRedisOnly) func aRedisThatLostItsDataNeverHandsOutADeliveredSeqAgain() throws {
        let redis = try TestRedis()
        let nodes = try cluster(redis, nodes: 2)
        let near = try nodes[0].client()
        let far = try nodes[1].client()
        try subscribe(near, #""ch":"r.lost""#)
        try subscribe(far, #""ch":"r.lost""#)
        let publisher = try nodes[0].client()
        for n in 1...5 { #expect(try publisher.request(#"{"op":"pub","ch":"r.lost","data":\#(n),"rid":\#(n)}"#)["seq"] as? Int == n) }
        #expect(try events(near, 5).compactMap { $0["seq"] as? Int } == [1, 2, 3, 4, 5])
        #expect(try events(far, 5).compactMap { $0["seq"] as? Int } == [1, 2, 3, 4, 5])
        redis.stop()
        try FileManager.default.removeItem(at: redis.directory.appendingPathComponent("appendonlydir"))
        try redis.restart()
        let resumed = try publishOnceServed(publisher, #""ch":"r.lost","data":6"#)
        #expect(resumed["seq"] as? Int == 6, "the counter continues past what was delivered: \(resumed)")
        #expect(try near.frame()["seq"] as? Int == 6)
        #expect(try far.frame()["seq"] as? Int == 6)
        // The other node may still be reconnecting (its backoff after Redis went away).
        let before = try subscribeOnceServed(nodes[1], #""ch":"r.lost","since":2"#)
        #expect(before["recovered"] as? Bool == false, "events 3…5 are gone: \(before)")
        let after = try subscribeOnceServed(nodes[1], #""ch":"r.lost","since":5"#)
        #expect(after["recovered"] as? Bool == true, "nothing after 5 was lost: \(after)")
    }

    /// A Redis that comes back without its data counts interest versions from 1 again. The
    /// other node's routing table still held this node's patterns at the old, higher
    /// versions (removed ones too), which refused every new change up to them; and this node
    /// counted the other as having acknowledged them already, so a `sub`'s ok did not wait.
    /// Now each channel subscribed to again is routed at once, from its ok on.
    @Test func interestAfterARedisThatLostItsDataIsRoutedFromTheSubscriptionsOk() throws {
        let redis = try TestRedis()
        let nodes = try cluster(redis, nodes: 2)
        let publisher = try nodes[0].client()
        let subscriber = try nodes[1].client()
        let rounds = 20
        for round in 0..<rounds {
            try subscribe(subscriber, #""ch":"v.\#(round)","sub":"v\#(round)""#)
            #expect(try subscriber.request(#"{"op":"unsub","sub":"v\#(round)","rid":"u"}"#)["ok"] as? String == "unsub")
        }
        redis.stop()
        try FileManager.default.removeItem(at: redis.directory.appendingPathComponent("appendonlydir"))
        try redis.restart()
        #expect(try publishOnceServed(publisher, #""ch":"v.none","data":0"#)["ok"] as? String == "pub")
        #expect(try publishOnceServed(nodes[1].client(), #""ch":"v.none","data":0"#)["ok"] as? String == "pub")
        for round in 0..<rounds {
            try subscribe(subscriber, #""ch":"v.\#(round)","sub":"w\#(round)""#)
            let receipt = try publisher.request(#"{"op":"pub","ch":"v.\#(round)","data":\#(round),"rid":1}"#)
            #expect(receipt["receivers"] as? Int == 1, "round \(round): the new interest was routed at once")
            #expect(try subscriber.frame()["data"] as? Int == round)
        }
    }

    /// Publishes (`fields` plus a `rid`) every 50 ms until the node serves it again (5 s at
    /// most). - Returns: the last answer.
    private func publishOnceServed(_ publisher: TestClient, _ fields: String) throws -> [String: Any] {
        var answer: [String: Any] = [:]
        for attempt in 0..<100 {
            answer = try publisher.request(#"{"op":"pub",\#(fields),"rid":"u\#(attempt)"}"#)
            if answer["ok"] != nil { break }
            usleep(50_000)
        }
        return answer
    }

    /// A `sub` from a new client of `node`, sent again while the node answers `unavailable`
    /// (it has not reconnected to Redis yet).
    private func subscribeOnceServed(_ node: DaemonProcess, _ fields: String) throws -> [String: Any] {
        var answer: [String: Any] = [:]
        for _ in 0..<100 {
            answer = try node.client().request(#"{"op":"sub",\#(fields)}"#)
            if answer["error"] as? String != "unavailable" { break }
            usleep(50_000)
        }
        return answer
    }

    @Test func infoAndStatsNameTheNode() throws {
        let redis = try TestRedis()
        let nodes = try cluster(redis, nodes: 2)
        let client = try TestClient(port: nodes[1].port)
        let info = try client.frame()["info"] as? [String: Any]
        #expect(info?["node"] as? String == "n1")
        #expect(try client.request(#"{"op":"stats","rid":1}"#)["node"] as? String == "n1")
    }

    @Test func aNodeWhoseRedisIsUnreachableRefusesToStartNamingTheAddress() throws {
        let port = try TestRedis.freePort()
        #expect(throws: (any Error).self) {
            _ = try DaemonProcess(config: #"cluster: { redis: "redis://127.0.0.1:\#(port)", node: "x" },"#,
                                  arguments: ["--workers", "1"])
        }
    }
}
