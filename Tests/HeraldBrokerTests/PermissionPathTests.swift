import Foundation
import Testing
import HeraldBroker

/// The users of issue 12's attacks: `alice` may subscribe to `app.>` except `app.secret.>`
/// and publish only under `app.alice.>`; `bob` is a legitimate responder on `app.>`; `sysop`
/// may subscribe to `$sys.>` only; `nobody` has no rights; `admin` is unrestricted; `wide`
/// may subscribe to `>` (which never reaches `$…` names).
func issue12Users() -> [AuthUser] {
    [
        user("alice", token: "alice-t",
             publish: rule(allow: ["app.alice.>"]),
             subscribe: rule(allow: ["app.>"], deny: ["app.secret.>"])),
        user("bob", token: "bob-t", publish: rule(allow: ["app.>"]), subscribe: rule(allow: ["app.>"])),
        user("sysop", token: "sysop-t", publish: rule(allow: []), subscribe: rule(allow: ["$sys.>"])),
        user("nobody", token: "nobody-t", publish: rule(allow: []), subscribe: rule(allow: [])),
        user("admin", token: "admin-t"),
        user("wide", token: "wide-t", publish: rule(allow: []), subscribe: rule(allow: [">"])),
    ]
}

/// Replaces one of `issue12Users()` (by name) and applies the result as SIGHUP would.
private func reload(_ harness: BrokerHarness, replacing replacement: AuthUser, now: Int = 1) {
    let users = issue12Users().map { $0.name == replacement.name ? replacement : $0 }
    harness.broker.config.auth = AuthSettings(users: users)
    harness.broker.applyAuthSettings(now: now)
}

/// Issue 12, signals: an offer carries its origin's name and data, so a handler is asked only
/// when its user may subscribe to the origin, at every level and across links.
@Suite struct SignalPermissionTests {
    private func handler(_ harness: BrokerHarness, token: String, _ pattern: String, name: String) -> Session {
        let session = harness.connect(token: token)
        let ok = harness.subscribe(session, #""ch":"\#(pattern)","sub":"\#(name)","handle":true"#)
        #expect(ok["ok"] as? String == "sub", "\(ok)")
        return session
    }

    private func offer(_ harness: BrokerHarness, _ session: Session) -> [String: Any]? {
        harness.frames(session).first { $0["signal"] != nil }
    }

    @Test func signalOnADeniedChannelSkipsAHandlerDeniedItsOriginIssue12() {
        let harness = BrokerHarness(authConfig(issue12Users()))
        let sender = harness.connect(token: "admin-t")
        let alice = handler(harness, token: "alice-t", "app.*", name: "wide")
        let root = handler(harness, token: "admin-t", "app", name: "root")
        harness.send(sender, #"{"op":"signal","ch":"app.secret.x","data":"launch codes"}"#)
        #expect(harness.lines(alice).isEmpty, "alice may not subscribe to app.secret.x, so she is not asked at app.secret")
        let offered = offer(harness, root)
        #expect(offered?["signal"] as? String == "app")
        let id = offered?["id"] as? String ?? ""
        let stop = harness.request(alice, #"{"op":"handled","id":"\#(id)","action":"stop","rid":1}"#)
        #expect(stop["error"] as? String == "not_found", "her verdict does not reach the sender")
        let callback = harness.request(alice, #"{"op":"callback","id":"\#(id)","data":"forged","rid":2}"#)
        #expect(callback["error"] as? String == "not_found", "nor does a callback")
        harness.send(root, #"{"op":"handled","id":"\#(id)","action":"stop"}"#)
        let result = harness.frames(sender)
        #expect(result.count == 1, "no callback from alice: \(result)")
        #expect(result.first?["handled_by"] as? String == "c3/root")
        #expect(result.first?["hops"] as? Int == 1, "the skipped handler is not counted")
        #expect((result.first?["timeouts"] as? [Any])?.isEmpty == true)

        harness.send(sender, #"{"op":"signal","ch":"app.public.x"}"#)
        #expect(offer(harness, alice)?["signal"] as? String == "app.public", "an origin she may see still reaches her")
    }

    @Test func linkCannotMoveASignalToAHandlerDeniedItsOriginIssue12() {
        let harness = BrokerHarness(authConfig(issue12Users()))
        let sender = harness.connect(token: "admin-t")
        let alice = handler(harness, token: "alice-t", "app.open", name: "open")
        let root = handler(harness, token: "admin-t", "app", name: "root")
        #expect(harness.request(sender, #"{"op":"link","ch":"app.secret.x","parent":"app.open"}"#)["ok"] as? String == "link")
        harness.send(sender, #"{"op":"signal","ch":"app.secret.x"}"#)
        #expect(harness.lines(alice).isEmpty, "the link leads to app.open, but the origin is app.secret.x")
        let offered = offer(harness, root)
        harness.send(root, #"{"op":"handled","id":"\#(offered?["id"] as? String ?? "")","action":"pass"}"#)
        let result = harness.frames(sender).first
        #expect(result?["hops"] as? Int == 1)
        #expect(result.map { $0["handled_by"] is NSNull } == true)
    }

    @Test func offerHeldWhenSighupDeniesTheOriginPassesAtOnceIssue12() {
        let harness = BrokerHarness(authConfig(issue12Users()))
        let sender = harness.connect(token: "admin-t")
        let alice = handler(harness, token: "alice-t", "app.*", name: "wide")
        let root = handler(harness, token: "admin-t", "app", name: "root")
        harness.send(sender, #"{"op":"signal","ch":"app.ops.deploy","timeout_ms":60000}"#)
        let id = offer(harness, alice)?["id"] as? String ?? ""
        reload(harness, replacing: user("alice", token: "alice-t", publish: rule(allow: ["app.alice.>"]),
                                        subscribe: rule(allow: ["app.>"], deny: ["app.secret.>", "app.ops.>"])))
        #expect(harness.lines(alice).isEmpty, "app.* is still allowed: no removed frame")
        #expect(offer(harness, root)?["signal"] as? String == "app", "moved on without waiting for the timeout")
        let callback = harness.request(alice, #"{"op":"callback","id":"\#(id)","data":1,"rid":3}"#)
        #expect(callback["error"] as? String == "forbidden")
        #expect(callback["rid"] as? Int == 3)
        harness.send(alice, #"{"op":"handled","id":"\#(id)","action":"stop"}"#)
        #expect(harness.lines(alice).isEmpty, "a verdict on an offer no longer held is ignored")
        harness.send(root, #"{"op":"handled","id":"\#(id)","action":"stop"}"#)
        let result = harness.frames(sender)
        #expect(result.count == 1, "no callback from alice: \(result)")
        #expect(result.first?["timeouts"] as? [String] == ["c2/wide"])
        #expect(result.first?["handled_by"] as? String == "c3/root")
    }
}

/// Issue 12, request/reply: with auth on a token is not a right to answer.
@Suite struct ReplyPermissionTests {
    private func token(_ harness: BrokerHarness, _ session: Session) -> String {
        harness.frames(session).first { $0["reply"] != nil }?["reply"] as? String ?? ""
    }

    @Test func forgedReplyFromARecipientWithoutPublishRightIsForbiddenIssue12() {
        let harness = BrokerHarness(authConfig(issue12Users()))
        let requester = harness.connect(token: "admin-t")
        let bob = harness.connect(token: "bob-t")
        let alice = harness.connect(token: "alice-t")
        harness.subscribe(bob, #""ch":"app.q""#)
        harness.subscribe(alice, #""ch":"app.*""#)
        harness.send(requester, #"{"op":"req","ch":"app.q","rid":"r1","timeout_ms":5000}"#)
        let seen = token(harness, alice)
        #expect(seen == token(harness, bob), "alice sees the request through app.*")
        let forged = harness.request(alice, #"{"op":"reply","to":"\#(seen)","data":"forged","rid":9}"#)
        #expect(forged["error"] as? String == "forbidden")
        #expect(forged["op"] as? String == "reply")
        #expect(forged["rid"] as? Int == 9)
        #expect((forged["message"] as? String)?.contains("app.q") == true)
        #expect(harness.lines(requester).isEmpty, "the forged reply is not taken")
        let real = harness.request(bob, #"{"op":"reply","to":"\#(seen)","data":"real","rid":1}"#)
        #expect(real["delivered"] as? Bool == true, "the request was still pending")
        let answer = harness.frames(requester)
        #expect(answer.count == 1)
        #expect(answer.first?["from"] as? String == "c2")
        #expect(answer.first?["data"] as? String == "real")
        #expect(answer.first?["rid"] as? String == "r1")
    }

    @Test func replyFromAConnectionTheRequestWasNotDeliveredToIsForbiddenIssue12() {
        let harness = BrokerHarness(authConfig(issue12Users()))
        let requester = harness.connect(token: "admin-t")
        let bob = harness.connect(token: "bob-t")
        let otherAdmin = harness.connect(token: "admin-t")
        let bystander = harness.connect(token: "bob-t")
        harness.subscribe(bob, #""ch":"app.q""#)
        harness.send(requester, #"{"op":"req","ch":"app.q","timeout_ms":5000}"#)
        let leaked = token(harness, bob)
        for session in [otherAdmin, bystander] {
            let refused = harness.request(session, #"{"op":"reply","to":"\#(leaked)","data":0,"rid":1}"#)
            #expect(refused["error"] as? String == "forbidden", "holding the token is not enough: \(refused)")
        }
        #expect(harness.lines(requester).isEmpty)
        harness.send(bob, #"{"op":"reply","to":"\#(leaked)","data":1}"#)
        #expect(harness.frames(requester).first?["from"] as? String == "c2")
    }

    @Test func sighupThatTakesAwayPublishRemovesTheRecipientForGoodIssue12() {
        let harness = BrokerHarness(authConfig(issue12Users()))
        let requester = harness.connect(token: "admin-t")
        let bob = harness.connect(token: "bob-t")
        harness.subscribe(bob, #""ch":"app.q""#)
        harness.send(requester, #"{"op":"req","ch":"app.q","timeout_ms":100}"#)
        let seen = token(harness, bob)
        reload(harness, replacing: user("bob", token: "bob-t", publish: rule(allow: ["app.bob.>"]),
                                      subscribe: rule(allow: ["app.>"])))
        reload(harness, replacing: user("bob", token: "bob-t", publish: rule(allow: ["app.>"]),
                                      subscribe: rule(allow: ["app.>"])), now: 2)
        let refused = harness.request(bob, #"{"op":"reply","to":"\#(seen)","data":1,"rid":1}"#)
        #expect(refused["error"] as? String == "forbidden", "rights given back later do not restore the token")
        harness.now = 100
        harness.broker.fireDeadlines(now: 100)
        #expect(harness.frames(requester).first?["error"] as? String == "timeout")
    }

    @Test func requestSentBeforeAuthWasTurnedOnCannotBeAnsweredAfterIssue12() {
        let harness = BrokerHarness()
        let requester = harness.connect(token: "admin-t")
        let bob = harness.connect(token: "bob-t")
        harness.subscribe(bob, #""ch":"app.q""#)
        harness.send(requester, #"{"op":"req","ch":"app.q","timeout_ms":100}"#)
        let seen = token(harness, bob)
        harness.broker.config.auth = AuthSettings(users: issue12Users())
        harness.broker.applyAuthSettings(now: 1)
        let refused = harness.request(bob, #"{"op":"reply","to":"\#(seen)","data":1,"rid":1}"#)
        #expect(refused["error"] as? String == "forbidden", "no recipients were recorded, so nobody may answer")
    }
}

/// Issue 12, `$sys`: events reach only users allowed `$sys.…` and name the proven user
/// beside the client-chosen display name; `stats` needs the same view.
@Suite struct SystemViewPermissionTests {
    @Test func systemEventsNameTheAuthenticatedUserBesideTheClaimedNameIssue12() {
        let harness = BrokerHarness(authConfig(issue12Users()))
        let sysop = harness.connect(token: "sysop-t")
        harness.subscribe(sysop, #""ch":"$sys.>""#)
        let wide = harness.connect(token: "wide-t")
        harness.subscribe(wide, #""ch":">""#)
        let alice = harness.connect(token: "alice-t")
        #expect(harness.subscribe(alice, #""ch":"$sys.>""#)["error"] as? String == "forbidden")
        #expect(harness.subscribe(wide, #""ch":"$sys.>""#)["error"] as? String == "forbidden")
        harness.send(alice, #"{"op":"hello","name":"admin"}"#)
        harness.broker.disconnect(alice)
        let data = harness.frames(sysop).compactMap { $0["data"] as? [String: Any] }
            .filter { $0["client"] as? String == "c3" }
        #expect(data.count == 2, "alice connected and disconnected: \(data)")
        #expect(data.first?["user"] is NSNull, "connected comes before hello")
        #expect(data.last?["name"] as? String == "admin", "the name is whatever the client said")
        #expect(data.last?["user"] as? String == "alice", "the user is who the token proved")
        #expect(harness.frames(wide).isEmpty, "> never matches a $ name")
    }

    @Test func removedChannelAndSlowConsumerEventsNameTheUserIssue12() {
        var config = authConfig(issue12Users())
        config.maxPending = 600
        let harness = BrokerHarness(config)
        let sysop = harness.connect(token: "sysop-t")
        harness.subscribe(sysop, #""ch":"$sys.channel.removed""#)
        harness.subscribe(sysop, #""ch":"$sys.slow_consumer""#)
        let admin = harness.connect(token: "admin-t")
        #expect(harness.request(admin, #"{"op":"declare","ch":"car.1"}"#)["ok"] as? String == "declare")
        #expect(harness.request(admin, #"{"op":"remove","ch":"car.1"}"#)["ok"] as? String == "remove")
        let slow = harness.connect(token: "bob-t")
        harness.subscribe(slow, #""ch":"app.news""#)
        for _ in 0..<10 { harness.send(admin, #"{"op":"pub","ch":"app.news","data":"0123456789012345678901234567890123456789"}"#) }
        let events = harness.frames(sysop)
        let removed = events.first { $0["event"] as? String == "$sys.channel.removed" }?["data"] as? [String: Any]
        #expect(removed?["user"] as? String == "admin")
        let overflow = events.first { $0["event"] as? String == "$sys.slow_consumer" }?["data"] as? [String: Any]
        #expect(overflow?["user"] as? String == "bob")
    }

    @Test func systemEventsSayUserNullWithoutAuthIssue12() {
        let harness = BrokerHarness()
        let watcher = harness.connect()
        harness.subscribe(watcher, #""ch":"$sys.client.>""#)
        let visitor = harness.connect(name: "terminal-1")
        harness.broker.disconnect(visitor)
        let data = harness.frames(watcher).compactMap { $0["data"] as? [String: Any] }
        #expect(data.count == 2)
        #expect(data.allSatisfy { $0["user"] is NSNull }, "\(data)")
    }

    @Test func statsNeedsSubscribeOnDollarSysWithAuthIssue12() {
        let harness = BrokerHarness(authConfig(issue12Users()))
        for refusedToken in ["alice-t", "nobody-t", "wide-t"] {
            let s = harness.connect(token: refusedToken)
            let refused = harness.request(s, #"{"op":"stats","rid":4}"#)
            #expect(refused["error"] as? String == "forbidden", "\(refusedToken): \(refused)")
            #expect(refused["op"] as? String == "stats")
            #expect(refused["rid"] as? Int == 4)
            #expect(!s.closeAfterFlush)
        }
        for allowedToken in ["sysop-t", "admin-t"] {
            let s = harness.connect(token: allowedToken)
            #expect(harness.request(s, #"{"op":"stats"}"#)["ok"] as? String == "stats", "\(allowedToken)")
        }
    }
}
