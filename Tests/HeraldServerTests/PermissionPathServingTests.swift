import Foundation
import Testing

/// Issue 12's attacks against the real `heraldd`: rights leaking through paths derived from a
/// channel (a signal's route, a reply token, `$sys` events, `stats`), over real sockets.
@Suite struct PermissionPathServingTests {
    /// `alice` subscribes `app.>` minus `app.secret.>` and publishes only `app.alice.>`;
    /// `sysop` may subscribe `$sys.>` only; `nobody` has no rights; `admin` is unrestricted.
    private static let users = """
        auth: { users: [
          { name: "alice", token: "alice-t", publish: { allow: ["app.alice.>"] },
            subscribe: { allow: ["app.>"], deny: ["app.secret.>"] } },
          { name: "sysop", token: "sysop-t", publish: { allow: [] }, subscribe: { allow: ["$sys.>"] } },
          { name: "nobody", token: "nobody-t", publish: { allow: [] }, subscribe: { allow: [] } },
          { name: "admin", token: "admin-t" },
        ] }
        """

    /// A connection authenticated with `token`, optionally under a display `name`.
    private func login(_ daemon: DaemonProcess, _ token: String, name: String? = nil) throws -> TestClient {
        let client = try daemon.client()
        let named = name.map { #","name":"\#($0)""# } ?? ""
        let ok = try client.request(#"{"op":"hello","token":"\#(token)"\#(named)}"#)
        #expect(ok["ok"] as? String == "hello", "\(token): \(ok)")
        return client
    }

    /// The next frame after a `ping`, proving nothing was queued for `client` before it.
    private func nothingQueued(_ client: TestClient) throws -> Bool {
        let next = try client.request(#"{"op":"ping","rid":"probe"}"#)
        return next["pong"] != nil && next["rid"] as? String == "probe"
    }

    @Test func signalAcrossADenyRuleIsNotOfferedToTheDeniedHandlerIssue12() throws {
        let daemon = try DaemonProcess(config: Self.users)
        let sender = try login(daemon, "admin-t")
        let alice = try login(daemon, "alice-t")
        let root = try login(daemon, "admin-t")
        #expect(try alice.request(#"{"op":"sub","ch":"app.*","sub":"spy","handle":true}"#)["ok"] as? String == "sub")
        #expect(try root.request(#"{"op":"sub","ch":"app","sub":"root","handle":true}"#)["ok"] as? String == "sub")
        sender.send(#"{"op":"signal","ch":"app.secret.x","data":"launch codes","rid":1}"#)
        let offer = try root.frame()
        #expect(offer["signal"] as? String == "app")
        #expect(try nothingQueued(alice), "alice may not subscribe to app.secret.x: no offer at app.secret")
        let id = offer["id"] as? String ?? ""
        let stop = try alice.request(#"{"op":"handled","id":"\#(id)","action":"stop","rid":2}"#)
        #expect(stop["error"] as? String == "not_found")
        root.send(#"{"op":"handled","id":"\#(id)","action":"stop"}"#)
        let result = try sender.frame()
        #expect(result["ok"] as? String == "signal")
        #expect(result["at"] as? String == "app")
        #expect(result["hops"] as? Int == 1)
    }

    @Test func forgedReplyIsForbiddenAndTheRealReplyStillWinsIssue12() throws {
        let daemon = try DaemonProcess(config: Self.users)
        let requester = try login(daemon, "admin-t")
        let responder = try login(daemon, "admin-t")
        let alice = try login(daemon, "alice-t")
        #expect(try responder.request(#"{"op":"sub","ch":"app.q","rid":1}"#)["ok"] as? String == "sub")
        #expect(try alice.request(#"{"op":"sub","ch":"app.*","rid":1}"#)["ok"] as? String == "sub")
        requester.send(#"{"op":"req","ch":"app.q","data":"balance?","rid":"q1","timeout_ms":5000}"#)
        let seen = try alice.frame()
        let token = seen["reply"] as? String ?? ""
        #expect(token.count == 32, "alice sees the request through app.*: \(seen)")
        let forged = try alice.request(#"{"op":"reply","to":"\#(token)","data":"forged","rid":7}"#)
        #expect(forged["error"] as? String == "forbidden")
        #expect(forged["op"] as? String == "reply")
        #expect(forged["rid"] as? Int == 7)
        #expect(try responder.frame()["reply"] as? String == token)
        let real = try responder.request(#"{"op":"reply","to":"\#(token)","data":"real","rid":8}"#)
        #expect(real["delivered"] as? Bool == true)
        let answer = try requester.frame()
        #expect(answer["ok"] as? String == "req")
        #expect(answer["rid"] as? String == "q1")
        #expect(answer["data"] as? String == "real", "the requester takes the real answer, not the forgery")
    }

    @Test func systemEventsCarryTheAuthenticatedUserIssue12() throws {
        let daemon = try DaemonProcess(config: Self.users)
        let sysop = try login(daemon, "sysop-t")
        #expect(try sysop.request(#"{"op":"sub","ch":"$sys.client.disconnected","rid":1}"#)["ok"] as? String == "sub")
        let alice = try login(daemon, "alice-t", name: "admin")
        #expect(try alice.request(#"{"op":"sub","ch":"$sys.>","rid":1}"#)["error"] as? String == "forbidden")
        alice.closeNow()
        let event = try sysop.frame(timeout: 10)
        #expect(event["event"] as? String == "$sys.client.disconnected")
        let data = event["data"] as? [String: Any]
        #expect(data?["name"] as? String == "admin", "the name is the client's claim")
        #expect(data?["user"] as? String == "alice", "the user is who the token proved")
    }

    @Test func statsIsForbiddenWithoutSubscribeOnDollarSysIssue12() throws {
        let daemon = try DaemonProcess(config: Self.users)
        for token in ["alice-t", "nobody-t"] {
            let client = try login(daemon, token)
            let refused = try client.request(#"{"op":"stats","rid":3}"#)
            #expect(refused["error"] as? String == "forbidden", "\(token): \(refused)")
            #expect(refused["op"] as? String == "stats" && refused["rid"] as? Int == 3)
            #expect(try nothingQueued(client), "forbidden leaves the connection open")
        }
        for token in ["sysop-t", "admin-t"] {
            #expect(try login(daemon, token).request(#"{"op":"stats"}"#)["ok"] as? String == "stats", "\(token)")
        }
    }
}
