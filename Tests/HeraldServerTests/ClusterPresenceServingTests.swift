import Foundation
import HeraldTestSupport
import Testing

/// Presence across three real nodes (issue 36; docs/cluster.md, "Presence"): a `presence`
/// answer gathers every node's members and pages through them, and joins and leaves made on
/// one node reach a watcher on another with the presence channel's `seq`.
@Suite(.enabled(if: TestRedis.isAvailable, "needs Debian's redis-server"), .serialized)
struct ClusterPresenceServingTests {
    private func client(_ node: DaemonProcess) throws -> (TestClient, String) { try ClusterTestNodes.client(node) }
    private func ok(_ client: TestClient, _ line: String, _ op: String) throws { try ClusterTestNodes.ok(client, line, op) }

    @Test func membersFromEveryNodeAreListedAndPaged() throws {
        let redis = try TestRedis()
        let nodes = try ClusterTestNodes.three(redis)
        var ids: [String] = []
        var members: [TestClient] = []
        for node in nodes {
            for _ in 0..<2 {
                let (member, id) = try client(node)
                try ok(member, #"{"op":"hello","info":{"at":"\#(node.port)"},"rid":0}"#, "hello")
                try ok(member, #"{"op":"sub","ch":"lobby","sub":"m"}"#, "sub")
                ids.append(id)
                members.append(member)
            }
        }
        let (asker, _) = try client(nodes[0])
        let all = try asker.request(#"{"op":"presence","ch":"lobby","rid":1}"#)
        #expect(all["count"] as? Int == 6, "\(all)")
        let listed = (all["members"] as? [[String: Any]] ?? []).compactMap { $0["client"] as? String }
        #expect(Set(listed) == Set(ids) && listed.count == 6, "\(all)")
        var paged: [String] = []
        var after = ""
        repeat {
            let page = try asker.request(#"{"op":"presence","ch":"lobby","rid":2,"limit":4"# + (after.isEmpty ? "" : #","after":"\#(after)""#) + "}")
            paged += (page["members"] as? [[String: Any]] ?? []).compactMap { $0["client"] as? String }
            after = page["next"] as? String ?? ""
        } while !after.isEmpty && paged.count < 12
        #expect(paged == listed, "pages in client-id order, each member once")
        #expect(try asker.request(#"{"op":"presence","ch":"lobby","rid":3,"count_only":true}"#)["count"] as? Int == 6)
        withExtendedLifetime(members) {}
    }

    @Test func joinsAndLeavesOnOneNodeReachAWatcherOnAnother() throws {
        let redis = try TestRedis()
        let nodes = try ClusterTestNodes.three(redis)
        let (watcher, _) = try client(nodes[0])
        try ok(watcher, #"{"op":"sub","ch":"$presence.room.>","sub":"p"}"#, "sub")
        let (guest, guestID) = try client(nodes[2])
        try ok(guest, #"{"op":"hello","info":"guest","rid":0}"#, "hello")
        try ok(guest, #"{"op":"sub","ch":"room.9","sub":"a"}"#, "sub")
        let joined = try watcher.frame()
        #expect(joined["event"] as? String == "$presence.room.9", "\(joined)")
        let data = joined["data"] as? [String: Any] ?? [:]
        #expect(data["action"] as? String == "join" && data["client"] as? String == guestID && data["info"] as? String == "guest")
        try ok(guest, #"{"op":"unsub","sub":"a"}"#, "unsub")
        let left = try watcher.frame()
        #expect((left["data"] as? [String: Any])?["action"] as? String == "leave")
        #expect((left["seq"] as? Int ?? 0) == (joined["seq"] as? Int ?? 0) + 1, "the presence channel's own seq")
    }

    /// A node killed with SIGKILL: once it is declared down its members leave, each once,
    /// told to watchers on both other nodes, and `presence` no longer lists them.
    @Test func aKilledNodesMembersLeaveOnceOnEveryNode() throws {
        let redis = try TestRedis()
        let nodes = try ClusterTestNodes.three(redis)
        let (near, _) = try client(nodes[0])
        let (far, _) = try client(nodes[1])
        for watcher in [near, far] { try ok(watcher, #"{"op":"sub","ch":"$presence.deck","sub":"p"}"#, "sub") }
        var doomed: [String] = []
        var kept: [TestClient] = []
        for _ in 0..<3 {
            let (member, id) = try client(nodes[2])
            try ok(member, #"{"op":"sub","ch":"deck"}"#, "sub")
            doomed.append(id)
            kept.append(member)
        }
        let (stays, staysID) = try client(nodes[1])
        try ok(stays, #"{"op":"sub","ch":"deck"}"#, "sub")
        for watcher in [near, far] {
            let joins = try (0..<4).map { _ in (try watcher.frame()["data"] as? [String: Any])?["client"] as? String ?? "?" }
            #expect(Set(joins) == Set(doomed + [staysID]), "\(joins)")
        }
        nodes[2].signal(SIGKILL)
        for watcher in [near, far] {
            var left: [String] = []
            while left.count < 3, let frame = try? watcher.frame(timeout: 10) {
                let data = frame["data"] as? [String: Any] ?? [:]
                if data["action"] as? String == "leave", let id = data["client"] as? String { left.append(id) }
            }
            #expect(left.sorted() == doomed.sorted(), "each of the dead node's members left: \(left)")
            #expect(throws: (any Error).self, "and only once") { _ = try watcher.frame(timeout: 1) }
        }
        let answer = try near.request(#"{"op":"presence","ch":"deck","rid":1}"#)
        #expect(answer["count"] as? Int == 1 && (answer["members"] as? [[String: Any]])?.first?["client"] as? String == staysID,
                "\(answer)")
        withExtendedLifetime((kept, stays)) {}
    }
}
