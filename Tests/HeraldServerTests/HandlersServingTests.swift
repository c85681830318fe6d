import Foundation
import HeraldTestSupport
import Testing

/// `handlers {ch}` (issue 37, for the console): the signal handlers of a channel's own level
/// in offer order, admins only; across three nodes, every node's.
@Suite struct HandlersServingTests {
    private static let users = """
        auth: { users: [
          { name: "ops", token: "ops-token", admin: true },
          { name: "app", token: "app-token" },
        ] }
        """

    private func hello(_ daemon: DaemonProcess, _ token: String) throws -> (TestClient, String) {
        let client = try daemon.client()
        let answer = try client.request(#"{"op":"hello","token":"\#(token)","rid":0}"#)
        return (client, answer["client"] as? String ?? "?")
    }

    @Test func anAdminListsAChannelsHandlersInOfferOrderAndOthersAreForbidden() throws {
        let daemon = try DaemonProcess(config: Self.users)
        let (ops, _) = try hello(daemon, "ops-token")
        let (app, appID) = try hello(daemon, "app-token")
        try ClusterTestNodes.ok(app, #"{"op":"sub","ch":"room.*","sub":"wide","handle":true}"#, "sub")
        try ClusterTestNodes.ok(app, #"{"op":"sub","ch":"room.1","sub":"plain"}"#, "sub")
        try ClusterTestNodes.ok(app, #"{"op":"sub","ch":"room.1","sub":"own","handle":true}"#, "sub")
        try ClusterTestNodes.ok(app, #"{"op":"sub","ch":"hall","sub":"elsewhere","handle":true}"#, "sub")
        let answer = try ops.request(#"{"op":"handlers","ch":"room.1","rid":1}"#)
        #expect(answer["ok"] as? String == "handlers" && answer["ch"] as? String == "room.1", "\(answer)")
        #expect(answer["handlers"] as? [String] == [appID + "/wide", appID + "/own"], "handlers only, in order: \(answer)")
        #expect(try ops.request(#"{"op":"handlers","ch":"nobody","rid":2}"#)["handlers"] as? [String] == [])
        #expect(try ops.request(#"{"op":"handlers","ch":"room.*","rid":3}"#)["error"] as? String == "bad_channel")
        #expect(try ops.request(#"{"op":"handlers","rid":4}"#)["error"] as? String == "missing_field")
        #expect(try app.request(#"{"op":"handlers","ch":"room.1","rid":5}"#)["error"] as? String == "forbidden")
    }

    @Test func tenThousandHandlersElsewhereCostTheAskNothing() throws {
        // A hostile user's many handlers on other channels: the answer walks what matches.
        let daemon = try DaemonProcess()
        let filler = try daemon.client()
        for n in 0..<10_000 { filler.send(#"{"op":"sub","ch":"spam.\#(n)","sub":"s\#(n)","handle":true}"#) }
        for _ in 0..<10_000 { #expect(try filler.frame(timeout: 30)["ok"] as? String == "sub") }
        let asker = try daemon.client()
        try ClusterTestNodes.ok(asker, #"{"op":"sub","ch":"quiet","sub":"q","handle":true}"#, "sub")
        let answer = try asker.request(#"{"op":"handlers","ch":"quiet","rid":1}"#)
        #expect((answer["handlers"] as? [String])?.count == 1, "\(answer)")
    }
}

/// The same across three real nodes: a handler on another node is listed.
@Suite(.enabled(if: TestRedis.isAvailable, "needs Debian's redis-server"), .serialized)
struct ClusterHandlersServingTests {
    @Test func handlersOfEveryNodeAreListed() throws {
        let redis = try TestRedis()
        let nodes = try ClusterTestNodes.three(redis)
        let (asker, _) = try ClusterTestNodes.client(nodes[0])
        let (far, farID) = try ClusterTestNodes.client(nodes[2])
        try ClusterTestNodes.ok(far, #"{"op":"sub","ch":"door.*","sub":"guard","handle":true}"#, "sub")
        var listed: [String] = []
        for _ in 0..<50 {
            listed = try asker.request(#"{"op":"handlers","ch":"door.front","rid":1}"#)["handlers"] as? [String] ?? []
            if !listed.isEmpty { break }
            Thread.sleep(forTimeInterval: 0.1)
        }
        #expect(listed == [farID + "/guard"], "the other node's handler: \(listed)")
    }
}
