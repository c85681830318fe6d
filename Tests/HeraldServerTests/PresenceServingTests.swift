import Foundation
import HeraldTestSupport
import Testing

/// Presence on one node (issue 36; docs/protocol.md, "Presence"), against the real daemon:
/// who is listed, when joins and leaves are told, their `seq` and replay, permissions, count
/// mode, the grace period, and what a churning user costs the others.
@Suite struct PresenceServingTests {
    /// A client that said `hello` with `info` (and so has a client id), and that id.
    private func member(_ daemon: DaemonProcess, info: String? = nil, token: String? = nil) throws -> (TestClient, String) {
        let client = try daemon.client()
        var hello = #"{"op":"hello","rid":0"#
        if let info { hello += #","info":"# + info }
        if let token { hello += #","token":""# + token + "\"" }
        let answer = try client.request(hello + "}")
        return (client, answer["client"] as? String ?? "?")
    }

    private func ok(_ client: TestClient, _ line: String, _ op: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let answer = try client.request(line)
        #expect(answer["ok"] as? String == op, "\(line) → \(answer)", sourceLocation: sourceLocation)
    }

    private func presence(_ client: TestClient, _ channel: String, extra: String = "") throws -> [String: Any] {
        try client.request(#"{"op":"presence","ch":"\#(channel)","rid":9\#(extra)}"#)
    }

    /// The next presence event's data.
    private func change(_ client: TestClient, timeout: Double = 5) throws -> [String: Any] {
        let frame = try client.frame(timeout: timeout)
        return frame["data"] as? [String: Any] ?? ["frame": frame]
    }

    @Test func membersAreListedOnceWithTheirInfoAndWildcardsAndHandlersAreNot() throws {
        let daemon = try DaemonProcess()
        let (alice, aliceID) = try member(daemon, info: #"{"name":"Alice","instance":"phone-1"}"#)
        try ok(alice, #"{"op":"sub","ch":"room.1","sub":"a"}"#, "sub")
        try ok(alice, #"{"op":"sub","ch":"room.1","sub":"b"}"#, "sub")
        let (bob, _) = try member(daemon)
        try ok(bob, #"{"op":"sub","ch":"room.*","sub":"w"}"#, "sub")
        try ok(bob, #"{"op":"sub","ch":"room.1","sub":"h","handle":true}"#, "sub")
        let answer = try presence(bob, "room.1")
        #expect(answer["count"] as? Int == 1, "\(answer)")
        let members = answer["members"] as? [[String: Any]] ?? []
        #expect(members.count == 1 && members.first?["client"] as? String == aliceID)
        #expect((members.first?["info"] as? [String: Any])?["name"] as? String == "Alice")
        #expect(try presence(bob, "room.1", extra: #","count_only":true"#)["members"] == nil)
        #expect(try presence(bob, "room.*")["error"] as? String == "bad_channel")
        #expect(try presence(bob, "$sys.x")["error"] as? String == "bad_channel")
    }

    @Test func joinOnTheFirstSubscriptionLeaveOnTheLastWhateverEndsIt() throws {
        let daemon = try DaemonProcess()
        let (watcher, _) = try member(daemon)
        try ok(watcher, #"{"op":"sub","ch":"$presence.room.2","sub":"p"}"#, "sub")
        let (guest, guestID) = try member(daemon, info: #""guest""#)
        try ok(guest, #"{"op":"sub","ch":"room.2","sub":"a"}"#, "sub")
        let joined = try change(watcher)
        #expect(joined["action"] as? String == "join" && joined["client"] as? String == guestID && joined["info"] as? String == "guest")
        try ok(guest, #"{"op":"sub","ch":"room.2","sub":"b"}"#, "sub")
        try ok(guest, #"{"op":"unsub","sub":"a"}"#, "unsub")
        #expect(throws: (any Error).self, "a second subscription and one of two ending are no news") { _ = try watcher.frame(timeout: 0.3) }
        try ok(guest, #"{"op":"unsub","sub":"b"}"#, "unsub")
        #expect(try change(watcher)["action"] as? String == "leave")
        // once spent
        try ok(guest, #"{"op":"sub","ch":"room.2","sub":"o","once":true}"#, "sub")
        #expect(try change(watcher)["action"] as? String == "join")
        let (publisher, _) = try member(daemon)
        publisher.send(#"{"op":"pub","ch":"room.2","data":1}"#)
        #expect(try change(watcher)["action"] as? String == "leave", "once spent")
        #expect(try guest.frame()["data"] as? Int == 1)
        // max spent
        try ok(guest, #"{"op":"sub","ch":"room.2","sub":"m","max":2}"#, "sub")
        #expect(try change(watcher)["action"] as? String == "join")
        publisher.send(#"{"op":"pub","ch":"room.2","data":2}"#)
        publisher.send(#"{"op":"pub","ch":"room.2","data":3}"#)
        #expect(try change(watcher)["action"] as? String == "leave", "max spent")
        #expect(try [guest.frame(), guest.frame()].compactMap { $0["data"] as? Int } == [2, 3])
        // disconnect
        try ok(guest, #"{"op":"sub","ch":"room.2","sub":"d"}"#, "sub")
        #expect(try change(watcher)["action"] as? String == "join")
        guest.closeNow()
        let left = try change(watcher)
        #expect(left["action"] as? String == "leave" && left["client"] as? String == guestID)
    }

    @Test func eventsCarryThePresenceChannelsSeqAndSinceReplaysThem() throws {
        let daemon = try DaemonProcess()
        let (first, _) = try member(daemon)
        try ok(first, #"{"op":"sub","ch":"$presence.room.3","sub":"p"}"#, "sub")
        let (guest, _) = try member(daemon)
        try ok(guest, #"{"op":"sub","ch":"room.3"}"#, "sub")
        try ok(guest, #"{"op":"unsub","all":true}"#, "unsub")
        let one = try first.frame()
        let two = try first.frame()
        #expect(one["event"] as? String == "$presence.room.3" && one["seq"] as? Int == 1 && two["seq"] as? Int == 2)
        let (late, _) = try member(daemon)
        try ok(late, #"{"op":"sub","ch":"$presence.room.3","sub":"p","since":0}"#, "sub")
        let replayed = try [late.frame(), late.frame()].compactMap { ($0["data"] as? [String: Any])?["action"] as? String }
        #expect(replayed == ["join", "leave"])
    }

    @Test func presenceNeedsSubscribeRightsOnTheChannelItIsAbout() throws {
        let config = """
            auth: { users: [
              { name: "app", token: "app-token", subscribe: { allow: ["app.>"] } },
              { name: "root", token: "root-token" },
            ] }
            """
        let daemon = try DaemonProcess(config: config)
        let (app, _) = try member(daemon, token: "app-token")
        #expect(try presence(app, "app.room")["ok"] as? String == "presence")
        #expect(try presence(app, "other.room")["error"] as? String == "forbidden")
        try ok(app, #"{"op":"sub","ch":"$presence.app.room","sub":"p"}"#, "sub")
        try ok(app, #"{"op":"sub","ch":"$presence.app.*","sub":"q"}"#, "sub")
        #expect(try app.request(#"{"op":"sub","ch":"$presence.other.room","sub":"x"}"#)["error"] as? String == "forbidden")
        #expect(try app.request(#"{"op":"sub","ch":"$presence.>","sub":"y"}"#)["error"] as? String == "forbidden")
        #expect(try app.request(#"{"op":"pub","ch":"$presence.app.room","data":1}"#)["error"] as? String == "forbidden")
        let (root, rootID) = try member(daemon, token: "root-token")
        try ok(root, #"{"op":"sub","ch":"$presence.>","sub":"all"}"#, "sub")
        try ok(root, #"{"op":"sub","ch":"app.room"}"#, "sub")
        let seen = try change(root)
        #expect(seen["client"] as? String == rootID && seen["user"] as? String == "root")
    }

    @Test func pastTheThresholdWatchersGetCountsAtMostOnceASecond() throws {
        let daemon = try DaemonProcess(config: "presence_max_members: 3")
        let (watcher, _) = try member(daemon)
        try ok(watcher, #"{"op":"sub","ch":"$presence.big","sub":"p"}"#, "sub")
        var members: [TestClient] = []
        for _ in 0..<6 {
            let (client, _) = try member(daemon)
            try ok(client, #"{"op":"sub","ch":"big"}"#, "sub")
            members.append(client)
        }
        var actions: [String] = []
        var lastCount = -1
        let deadline = Date().addingTimeInterval(4)
        while Date() < deadline {
            guard let data = try? change(watcher, timeout: 0.5) else { continue }
            actions.append(data["action"] as? String ?? "?")
            if data["action"] as? String == "count" { lastCount = data["count"] as? Int ?? -1 }
            if lastCount == 6 { break }
        }
        #expect(actions.prefix(3) == ["join", "join", "join"], "\(actions)")
        #expect(!actions.dropFirst(3).contains("join"), "joins past the threshold are counts: \(actions)")
        #expect(lastCount == 6, "\(actions)")
        let page = try presence(watcher, "big", extra: #","limit":4"#)
        #expect(page["count"] as? Int == 6 && (page["members"] as? [Any])?.count == 4, "\(page)")
        let next = page["next"] as? String ?? ""
        let rest = try presence(watcher, "big", extra: #","limit":4,"after":"\#(next)""#)
        #expect((rest["members"] as? [Any])?.count == 2 && rest["next"] == nil, "\(rest)")
        withExtendedLifetime(members) {}
    }

    @Test func aReconnectWithinTheGraceIsNoLeaveAndNoJoin() throws {
        let daemon = try DaemonProcess(config: "presence_grace_ms: 1500")
        let (watcher, _) = try member(daemon)
        try ok(watcher, #"{"op":"sub","ch":"$presence.doc","sub":"p"}"#, "sub")
        let (phone, phoneID) = try member(daemon, info: #"{"instance":"ipad-7"}"#)
        try ok(phone, #"{"op":"sub","ch":"doc"}"#, "sub")
        #expect(try change(watcher)["action"] as? String == "join")
        phone.closeNow()
        Thread.sleep(forTimeInterval: 0.3)
        #expect(try presence(watcher, "doc")["count"] as? Int == 1, "kept through its grace")
        let (back, backID) = try member(daemon, info: #"{"instance":"ipad-7"}"#)
        try ok(back, #"{"op":"sub","ch":"doc"}"#, "sub")
        #expect(throws: (any Error).self, "no leave and no join") { _ = try watcher.frame(timeout: 2) }
        let members = try presence(watcher, "doc")["members"] as? [[String: Any]] ?? []
        #expect(members.map { $0["client"] as? String } == [backID] && backID != phoneID)
        // Without coming back, the leave comes once the grace is over.
        let (other, otherID) = try member(daemon, info: #"{"instance":"laptop"}"#)
        try ok(other, #"{"op":"sub","ch":"doc"}"#, "sub")
        #expect(try change(watcher)["action"] as? String == "join")
        other.closeNow()
        #expect(throws: (any Error).self, "not before the grace") { _ = try watcher.frame(timeout: 0.8) }
        let left = try change(watcher, timeout: 3)
        #expect(left["action"] as? String == "leave" && left["client"] as? String == otherID)
        withExtendedLifetime(back) {}
    }

    @Test func anInfoPastItsLimitIsRefused() throws {
        let daemon = try DaemonProcess(config: "max_info_bytes: 64")
        let client = try daemon.client()
        let big = String(repeating: "x", count: 100)
        let answer = try client.request(#"{"op":"hello","rid":1,"info":"\#(big)"}"#)
        #expect(answer["error"] as? String == "limit", "\(answer)")
        #expect(try client.request(#"{"op":"ping","rid":2}"#)["pong"] != nil, "the connection lives on")
    }

    /// 100,000 members (over 100 connections × 1,000 subscriptions is too few: one member per
    /// connection) — here 2,000 connections is what the machine holds quickly; each page costs
    /// what it lists, and paging visits every member once.
    @Test func pagingVisitsEveryMemberOnce() throws {
        let daemon = try DaemonProcess()
        var clients: [TestClient] = []
        for _ in 0..<300 {
            let client = try daemon.client()
            client.send(#"{"op":"sub","ch":"hall"}"#)
            clients.append(client)
        }
        for client in clients { _ = try client.frame() }
        let asker = try daemon.client()
        var seen: [String] = []
        var after = ""
        repeat {
            let page = try presence(asker, "hall", extra: #","limit":128"# + (after.isEmpty ? "" : #","after":"\#(after)""#))
            seen += (page["members"] as? [[String: Any]] ?? []).compactMap { $0["client"] as? String }
            after = page["next"] as? String ?? ""
        } while !after.isEmpty
        #expect(seen.count == 300 && Set(seen).count == 300)
    }
}
