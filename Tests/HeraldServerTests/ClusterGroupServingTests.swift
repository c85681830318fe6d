import Foundation
import HeraldTestSupport
import Testing

/// Queue groups across a real cluster (docs/cluster.md, "Queue groups"): a real redis-server,
/// three real heraldd nodes, members on different nodes. Each event goes to exactly one
/// member of each matching group, round robin over the whole cluster's members.
@Suite(.enabled(if: TestRedis.isAvailable, "needs Debian's redis-server"), .serialized)
struct ClusterGroupServingTests {
    private func cluster(_ redis: TestRedis, nodes: Int = 3, workers: Int = 1) throws -> [DaemonProcess] {
        try (0..<nodes).map { index in
            try DaemonProcess(config: #"cluster: { redis: "redis://127.0.0.1:\#(redis.port)", node: "n\#(index)" },"#,
                              arguments: ["--workers", String(workers)])
        }
    }

    private func subscribe(_ client: TestClient, _ fields: String) throws {
        let answer = try client.request(#"{"op":"sub",\#(fields)}"#)
        #expect(answer["ok"] as? String == "sub", "\(answer)")
    }

    /// The `data` of the next `count` events, then checks nothing more comes.
    private func received(_ client: TestClient, _ count: Int) throws -> [Int] {
        let got = try (0..<count).map { _ in try client.frame()["data"] as? Int ?? -1 }
        #expect(throws: (any Error).self, "no extra event") { _ = try client.frame(timeout: 0.3) }
        return got
    }

    /// Publishes `count` events with receipts and waits for them all.
    private func publish(_ publisher: TestClient, _ channel: String, _ range: Range<Int>) throws {
        for n in range { publisher.send(#"{"op":"pub","ch":"\#(channel)","data":\#(n),"rid":\#(n)}"#) }
        for _ in range { #expect(try publisher.frame()["ok"] as? String == "pub") }
    }

    @Test(arguments: [1, 2])
    func oneMemberPerEventRoundRobinOverMembersOnThreeNodes(workers: Int) throws {
        let redis = try TestRedis()
        let nodes = try cluster(redis, workers: workers)
        let members = try nodes.map { try $0.client() }
        for (position, member) in members.enumerated() {
            try subscribe(member, #""ch":"jobs.*","group":"workers","sub":"w\#(position)""#)
        }
        let watcher = try nodes[1].client()
        try subscribe(watcher, #""ch":"jobs.new","sub":"all""#)
        let publisher = try nodes[0].client()
        let count = 30
        try publish(publisher, "jobs.new", 0..<count)
        let shares = try members.map { try received($0, count / 3) }
        #expect(shares.flatMap { $0 }.sorted() == Array(0..<count), "each event exactly once in the group")
        for share in shares {
            #expect(Set(share.map { $0 % 3 }).count == 1, "round robin: every third event goes to the same member: \(share)")
        }
        #expect(try received(watcher, count) == Array(0..<count), "a subscriber outside the group gets every event")
    }

    @Test func stateChangesGoToOneMemberOfTheGroupForTheWholeCluster() throws {
        let redis = try TestRedis()
        let nodes = try cluster(redis)
        let members = try nodes.map { try $0.client() }
        for (position, member) in members.enumerated() {
            try subscribe(member, #""ch":"cfg.*","group":"g","sub":"m\#(position)""#)
        }
        let writer = try nodes[2].client()
        for n in 0..<12 { #expect(try writer.request(#"{"op":"set","ch":"cfg.x","value":\#(n)}"#)["rev"] as? Int == n + 1) }
        var values: [Int] = []
        for member in members {
            let got = try (0..<4).map { _ in try member.frame()["value"] as? Int ?? -1 }
            #expect(throws: (any Error).self, "no extra event") { _ = try member.frame(timeout: 0.3) }
            values += got
        }
        #expect(values.sorted() == Array(0..<12), "each change once in the group, four per member")
    }

    @Test func aNodeWithTwoMembersTakesTwoSlotsSoEachMemberGetsItsShare() throws {
        let redis = try TestRedis()
        let nodes = try cluster(redis)
        let members = [try nodes[1].client(), try nodes[1].client(), try nodes[2].client()]
        for (position, member) in members.enumerated() {
            try subscribe(member, #""ch":"tasks","group":"g","sub":"m\#(position)""#)
        }
        let publisher = try nodes[0].client()
        try publish(publisher, "tasks", 0..<30)
        let shares = try members.map { try received($0, 10) }
        #expect(shares.flatMap { $0 }.sorted() == Array(0..<30))
    }

    @Test func membersLeavingOnOneNodeMoveTheirShareToTheOthersWithNothingLost() throws {
        let redis = try TestRedis()
        let nodes = try cluster(redis)
        let stays = try nodes[1].client()
        let leaves = try nodes[2].client()
        try subscribe(stays, #""ch":"q.x","group":"g","sub":"a""#)
        try subscribe(leaves, #""ch":"q.x","group":"g","sub":"b""#)
        let publisher = try nodes[0].client()
        try publish(publisher, "q.x", 0..<10)
        let first = try received(stays, 5) + received(leaves, 5)
        #expect(first.sorted() == Array(0..<10))
        #expect(try leaves.request(#"{"op":"unsub","sub":"b","rid":"u"}"#)["count"] as? Int == 1)
        // The count change is sent on the leaving node's next pass; a receipted pub from that
        // node afterwards is ordered after it on its Redis connection.
        let marker = try nodes[2].client()
        #expect(try marker.request(#"{"op":"pub","ch":"other","rid":1}"#)["ok"] as? String == "pub")
        try publish(publisher, "q.x", 10..<20)
        #expect(try received(stays, 10) == Array(10..<20), "the remaining member takes every event")
    }

    /// A Redis that comes back without its data lost every node's group counts: each node
    /// registers its groups again, and the group is served exactly once, round robin, again.
    @Test func groupsAreRegisteredAgainWhenRedisComesBackEmpty() throws {
        let redis = try TestRedis()
        let nodes = try cluster(redis)
        let members = [try nodes[1].client(), try nodes[2].client()]
        for member in members { try subscribe(member, #""ch":"r.g","group":"g""#) }
        let publisher = try nodes[0].client()
        try publish(publisher, "r.g", 0..<4)
        #expect(try members.flatMap { try received($0, 2) }.sorted() == Array(0..<4))
        redis.stop()
        try FileManager.default.removeItem(at: redis.directory.appendingPathComponent("appendonlydir"))
        try redis.restart()
        // Probes (data -1) until both members got one: both nodes registered their group again.
        var probed = [0, 0]
        for attempt in 0..<300 where probed.contains(0) {
            let answer = try publisher.request(#"{"op":"pub","ch":"r.g","data":-1,"rid":"p\#(attempt)"}"#)
            guard answer["ok"] != nil else {
                usleep(50_000)
                continue
            }
            for (position, member) in members.enumerated() where (try? member.frame(timeout: 0.1)) != nil {
                probed[position] += 1
            }
        }
        #expect(!probed.contains(0), "both nodes registered their group again: \(probed)")
        for n in 0..<10 { publisher.send(#"{"op":"pub","ch":"r.g","data":\#(n)}"#) }
        let shares = members.map { member in
            (0..<6).compactMap { _ in try? member.frame(timeout: 1)["data"] as? Int }.filter { $0 >= 0 }
        }
        #expect(shares.flatMap { $0 }.sorted() == Array(0..<10), "exactly once: \(shares)")
        #expect(shares.map(\.count) == [5, 5], "round robin: \(shares)")
    }

    /// A node that stops takes its members out of the group's counts (and a node that dies
    /// is left out once its liveness key expires): the others get every event.
    @Test func aNodeThatLeavesGetsNoMoreOfTheGroupsEvents() throws {
        let redis = try TestRedis()
        let nodes = try cluster(redis)
        let stays = try nodes[1].client()
        let goes = try nodes[2].client()
        try subscribe(stays, #""ch":"l.g","group":"g""#)
        try subscribe(goes, #""ch":"l.g","group":"g""#)
        nodes[2].signal(SIGTERM)
        #expect(nodes[2].waitForExit(seconds: 10) == 0)
        let publisher = try nodes[0].client()
        try publish(publisher, "l.g", 0..<10)
        #expect(try received(stays, 10) == Array(0..<10))
    }

    @Test func aKilledNodesSlotsAreSkippedOnceItsLivenessKeyExpires() throws {
        let redis = try TestRedis()
        let nodes = try cluster(redis)
        let stays = try nodes[1].client()
        let dies = try nodes[2].client()
        try subscribe(stays, #""ch":"k.g","group":"g""#)
        try subscribe(dies, #""ch":"k.g","group":"g""#)
        nodes[2].signal(SIGKILL)
        _ = nodes[2].waitForExit(seconds: 10)
        usleep(UInt32(1_000 * (5_000 + 1_000)))
        let publisher = try nodes[0].client()
        try publish(publisher, "k.g", 0..<10)
        #expect(try received(stays, 10) == Array(0..<10))
    }

    @Test func twoGroupsOnOnePatternEachGetEveryEventOnce() throws {
        let redis = try TestRedis()
        let nodes = try cluster(redis)
        let a1 = try nodes[0].client()
        let a2 = try nodes[1].client()
        let b1 = try nodes[2].client()
        try subscribe(a1, #""ch":"ev.>","group":"a""#)
        try subscribe(a2, #""ch":"ev.>","group":"a""#)
        try subscribe(b1, #""ch":"ev.>","group":"b""#)
        let publisher = try nodes[2].client()
        try publish(publisher, "ev.1", 0..<12)
        let groupA = try received(a1, 6) + received(a2, 6)
        #expect(groupA.sorted() == Array(0..<12))
        #expect(try received(b1, 12) == Array(0..<12))
    }
}
