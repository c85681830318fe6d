import Foundation
import HeraldTestSupport
import Testing

/// Admin ops (issue 37, item 1; docs/protocol.md, "Admin"): `clients` pages every
/// connection, `kick` closes one with `kicked` (and its presence leaves), only for users with
/// `admin: true`; across three nodes both span the cluster.
@Suite struct AdminServingTests {
    private static let users = """
        auth: { users: [
          { name: "ops", token: "ops-token", admin: true },
          { name: "app", token: "app-token" },
        ] }
        """

    private func hello(_ daemon: DaemonProcess, _ token: String, name: String? = nil) throws -> (TestClient, String) {
        let client = try daemon.client()
        let named = name.map { #","name":"\#($0)""# } ?? ""
        let answer = try client.request(#"{"op":"hello","token":"\#(token)","rid":0\#(named)}"#)
        return (client, answer["client"] as? String ?? "?")
    }

    @Test func anAdminListsEveryConnectionPageByPageAndOthersAreForbidden() throws {
        let daemon = try DaemonProcess(config: Self.users)
        let (ops, opsID) = try hello(daemon, "ops-token")
        var apps: [String] = []
        var clients: [TestClient] = []
        for index in 0..<5 {
            let (app, id) = try hello(daemon, "app-token", name: "app-\(index)")
            try ClusterTestNodes.ok(app, #"{"op":"sub","ch":"x.\#(index)"}"#, "sub")
            apps.append(id)
            clients.append(app)
        }
        var seen: [[String: Any]] = []
        var after = ""
        repeat {
            let page = try ops.request(#"{"op":"clients","limit":2,"rid":1"# + (after.isEmpty ? "" : #","after":"\#(after)""#) + "}")
            #expect(page["ok"] as? String == "clients", "\(page)")
            seen += page["clients"] as? [[String: Any]] ?? []
            after = page["next"] as? String ?? ""
        } while !after.isEmpty && seen.count < 20
        #expect(seen.compactMap { $0["client"] as? String } == [opsID] + apps, "every connection once, in order")
        let first = seen.first { $0["client"] as? String == apps[0] } ?? [:]
        #expect(first["user"] as? String == "app" && first["name"] as? String == "app-0" && first["subs"] as? Int == 1)
        #expect(first["transport"] as? String == "tcp" && first["addr"] as? String == "127.0.0.1" && first["connected_ms"] is Int)
        #expect(first["pending_bytes"] is Int && first["dropped"] as? Int == 0)
        #expect(try clients[0].request(#"{"op":"clients","rid":2}"#)["error"] as? String == "forbidden")
        #expect(try clients[0].request(#"{"op":"kick","client":"\#(opsID)","rid":3}"#)["error"] as? String == "forbidden")
    }

    @Test func aKickedConnectionIsToldAndClosedAndItsPresenceLeaves() throws {
        let daemon = try DaemonProcess(config: Self.users)
        let (ops, _) = try hello(daemon, "ops-token")
        try ClusterTestNodes.ok(ops, #"{"op":"sub","ch":"$presence.room","sub":"p"}"#, "sub")
        let (app, appID) = try hello(daemon, "app-token")
        try ClusterTestNodes.ok(app, #"{"op":"sub","ch":"room"}"#, "sub")
        #expect((try ops.frame()["data"] as? [String: Any])?["action"] as? String == "join")
        let kicked = try ops.request(#"{"op":"kick","client":"\#(appID)","rid":1}"#)
        #expect(kicked["ok"] as? String == "kick" && kicked["count"] as? Int == 1, "\(kicked)")
        let (lines, closed) = app.linesUntilClosed(timeout: 5)
        #expect(closed && lines.last?.contains(#""error":"kicked""#) == true, "\(lines)")
        #expect((try ops.frame()["data"] as? [String: Any])?["action"] as? String == "leave")
        #expect(try ops.request(#"{"op":"kick","client":"\#(appID)","rid":2}"#)["count"] as? Int == 0, "gone already")
        #expect(try ops.request(#"{"op":"kick","client":"x9","rid":3}"#)["error"] as? String == "bad_field")
        #expect(daemon.waitForLog("connection kicked by an admin"), "the kick is logged")
    }
}

/// The same across three real nodes.
@Suite(.enabled(if: TestRedis.isAvailable, "needs Debian's redis-server"), .serialized)
struct ClusterAdminServingTests {
    @Test func clientsAndKickSpanTheNodes() throws {
        let redis = try TestRedis()
        let nodes = try ClusterTestNodes.three(redis)
        var ids: [String] = []
        var clients: [TestClient] = []
        for node in nodes {
            let (client, id) = try ClusterTestNodes.client(node)
            ids.append(id)
            clients.append(client)
        }
        let asker = clients[0]
        // A node just started may not be known to the asker's node yet (its join message is
        // on the way): the listing is read again until every node is in it, 5 s at most.
        var seen: [String] = []
        for _ in 0..<25 {
            seen = []
            var after = ""
            repeat {
                let page = try asker.request(#"{"op":"clients","limit":2,"rid":1"# + (after.isEmpty ? "" : #","after":"\#(after)""#) + "}")
                seen += (page["clients"] as? [[String: Any]] ?? []).compactMap { $0["client"] as? String }
                after = page["next"] as? String ?? ""
            } while !after.isEmpty && seen.count < 10
            if Set(seen) == Set(ids) { break }
            Thread.sleep(forTimeInterval: 0.2)
        }
        #expect(Set(seen) == Set(ids) && seen.count == 3, "every node's connection, each once: \(seen)")
        let kicked = try asker.request(#"{"op":"kick","client":"\#(ids[2])","rid":2}"#)
        #expect(kicked["count"] as? Int == 1, "\(kicked)")
        let (lines, closed) = clients[2].linesUntilClosed(timeout: 5)
        #expect(closed && lines.last?.contains(#""error":"kicked""#) == true, "\(lines)")
    }
}
