import Foundation
import Testing
import HeraldBroker
import HeraldWire

/// Builds broker auth settings from (name, token, publish, subscribe) without a config file.
func authConfig(_ users: [AuthUser], timeoutMs: Int = 2_000, maxLine: Int = 4_096) -> BrokerConfig {
    var config = BrokerConfig(epoch: "e")
    config.auth = AuthSettings(users: users, timeoutMs: timeoutMs, maxLine: maxLine)
    return config
}

/// A user whose token is stored as a salted hash, as the config's `token_hash` does.
func user(_ name: String, token: String, publish: ChannelRule = ChannelRule(), subscribe: ChannelRule = ChannelRule()) -> AuthUser {
    let line = TokenCredential.hashLine(token: Array(token.utf8), salt: Array(name.utf8))
    return AuthUser(name: name, credential: TokenCredential(hash: line) ?? TokenCredential(plainToken: []),
                    publish: publish, subscribe: subscribe)
}

func rule(allow: [String]? = nil, deny: [String] = []) -> ChannelRule {
    ChannelRule(allow: allow.map { $0.map { Array($0.utf8) } }, deny: deny.map { Array($0.utf8) })
}

extension BrokerHarness {
    /// Connects and authenticates with `token`, discarding `info` and the `ok`.
    func connect(token: String) -> Session {
        let session = connect()
        send(session, #"{"op":"hello","token":"\#(token)"}"#)
        grantLeases()
        _ = frames(session)
        return session
    }

    /// Connects without saying hello, returning the `info` frame too.
    func connectRaw() -> (Session, [String: Any]) {
        let session = broker.connect(id: 1_000 + rawCount(), now: now)
        return (session, frames(session).first ?? [:])
    }

    private func rawCount() -> Int { broker.connectionCount }
}

/// Auth gating: `info` says so, only hello and ping before a good token, a wrong token
/// closes, a slow one is closed by the deadline, and lines are short until then.
@Suite struct AuthTests {
    @Test func infoSaysWhetherAuthIsOn() {
        let open = BrokerHarness()
        #expect((open.connectRaw().1["info"] as? [String: Any])?["auth"] as? Bool == false)
        let closed = BrokerHarness(authConfig([user("app", token: "t")]))
        #expect((closed.connectRaw().1["info"] as? [String: Any])?["auth"] as? Bool == true)
    }

    @Test func onlyHelloAndPingBeforeAGoodHello() {
        let harness = BrokerHarness(authConfig([user("app", token: "t")]))
        let (s, _) = harness.connectRaw()
        #expect(harness.request(s, #"{"op":"ping"}"#)["pong"] != nil)
        for line in [#"{"op":"sub","ch":"a","rid":1}"#, #"{"op":"pub","ch":"a"}"#, #"{"op":"stats"}"#,
                     #"{"op":"pong"}"#, #"{"op":"get","ch":"a"}"#, #"{"op":"subs"}"#] {
            let answer = harness.request(s, line)
            #expect(answer["error"] as? String == "auth_required", "\(line)")
        }
        #expect(harness.request(s, #"{"op":"sub","ch":"a","rid":7}"#)["rid"] as? Int == 7, "rid is echoed")
        #expect(harness.request(s, #"{"op":"hello","name":"x"}"#)["error"] as? String == "auth_required",
                "a hello without a token is not a good hello")
        #expect(!s.closeAfterFlush)
        let ok = harness.request(s, #"{"op":"hello","token":"t","name":"me"}"#)
        #expect(ok["ok"] as? String == "hello")
        #expect(s.isAuthenticated && s.user?.name == "app")
        #expect(harness.request(s, #"{"op":"sub","ch":"a"}"#)["ok"] as? String == "sub")
        #expect(harness.request(s, #"{"op":"hello","name":"renamed"}"#)["ok"] as? String == "hello",
                "after authenticating, hello without a token just renames")
    }

    @Test func wrongTokenIsForbiddenAndCloses() {
        let harness = BrokerHarness(authConfig([user("app", token: "right")]))
        let (s, _) = harness.connectRaw()
        let frames = { harness.frames(s) }
        harness.send(s, #"{"op":"hello","token":"wrong","rid":"h"}"#)
        harness.send(s, #"{"op":"ping"}"#)
        let got = frames()
        #expect(got.count == 1, "nothing after the close: \(got)")
        #expect(got.first?["error"] as? String == "forbidden")
        #expect(got.first?["rid"] as? String == "h")
        #expect(s.closeAfterFlush)
        #expect(!s.isAuthenticated)
    }

    @Test func wrongTokenAfterAuthenticatingAlsoCloses() {
        let harness = BrokerHarness(authConfig([user("app", token: "right")]))
        let s = harness.connect(token: "right")
        #expect(harness.request(s, #"{"op":"hello","token":"nope"}"#)["error"] as? String == "forbidden")
        #expect(s.closeAfterFlush)
    }

    @Test func unauthenticatedConnectionIsClosedAtTheDeadline() {
        let harness = BrokerHarness(authConfig([user("app", token: "t")], timeoutMs: 500))
        let (slow, _) = harness.connectRaw()
        let quick = harness.connect(token: "t")
        #expect(harness.broker.nextDeadline == 500)
        _ = harness.broker.tick(now: 499)
        #expect(!slow.closeAfterFlush)
        _ = harness.broker.tick(now: 500)
        let frames = harness.frames(slow)
        #expect(frames.first?["error"] as? String == "auth_required")
        #expect((frames.first?["message"] as? String)?.contains("auth_timeout_ms") == true)
        #expect(slow.closeAfterFlush)
        #expect(!quick.closeAfterFlush, "an authenticated connection is not affected")
        #expect(harness.broker.nextDeadline == nil)
    }

    @Test func helloInTimeCancelsTheDeadlineAndLeavingDropsIt() {
        let harness = BrokerHarness(authConfig([user("app", token: "t")], timeoutMs: 500))
        let s = harness.connect(token: "t")
        #expect(harness.broker.nextDeadline == nil)
        let (gone, _) = harness.connectRaw()
        #expect(harness.broker.nextDeadline == 500)
        harness.broker.disconnect(gone)
        #expect(harness.broker.nextDeadline == nil, "no timer left behind")
        _ = harness.broker.tick(now: 10_000)
        #expect(!s.closeAfterFlush)
    }

    @Test func lineLimitIsSmallUntilAuthenticated() {
        var settings = authConfig([user("app", token: "t")], maxLine: 4_096)
        settings.maxLine = 1 << 20
        let harness = BrokerHarness(settings)
        let (s, _) = harness.connectRaw()
        #expect(harness.broker.lineLimit(for: s) == 4_096)
        harness.broker.lineTooLong(from: s, length: 5_000, now: 0)
        let message = harness.frames(s).first?["message"] as? String
        #expect(message?.contains("4096") == true)
        harness.send(s, #"{"op":"hello","token":"t"}"#)
        #expect(harness.broker.lineLimit(for: s) == 1 << 20)
        let open = BrokerHarness(config { $0.maxLine = 2048 })
        #expect(open.broker.lineLimit(for: open.connect()) == 2048, "without auth, max_line")
    }

    private func config(_ change: (inout BrokerConfig) -> Void) -> BrokerConfig {
        var config = BrokerConfig(epoch: "e")
        change(&config)
        return config
    }

    @Test func wildcardCharactersInTokensAndNamesAreLiteral() {
        let harness = BrokerHarness(authConfig([user(">", token: "a.*>"), user("*", token: "*")]))
        let (s, _) = harness.connectRaw()
        #expect(harness.request(s, #"{"op":"hello","token":"a.b>"}"#)["error"] as? String == "forbidden")
        let (t, _) = harness.connectRaw()
        #expect(harness.request(t, #"{"op":"hello","token":">"}"#)["error"] as? String == "forbidden",
                "a user named > is not anyone's token")
        let (u, _) = harness.connectRaw()
        #expect(harness.request(u, #"{"op":"hello","token":"a.*>"}"#)["ok"] as? String == "hello")
        #expect(u.user?.name == ">")
        let (v, _) = harness.connectRaw()
        #expect(harness.request(v, #"{"op":"hello","token":"*"}"#)["ok"] as? String == "hello")
        #expect(v.user?.name == "*")
    }

    @Test func tokensLongerThan4KiBAreNeverAccepted() {
        let long = String(repeating: "k", count: TokenCredential.maxTokenBytes + 1)
        let settings = AuthSettings(users: [AuthUser(name: "long", credential: TokenCredential(plainToken: Array(long.utf8)))])
        #expect(settings.user(for: Array(long.utf8)) == nil)
        let fits = String(long.dropFirst())
        let fitting = AuthSettings(users: [AuthUser(name: "fits", credential: TokenCredential(plainToken: Array(fits.utf8)))])
        #expect(fitting.user(for: Array(fits.utf8))?.name == "fits")
    }

    @Test func everyUserIsCheckedAndTheFirstMatchWins() {
        let harness = BrokerHarness(authConfig([user("one", token: "a"), user("two", token: "b"), user("three", token: "b")]))
        let s = harness.connect(token: "b")
        #expect(s.user?.name == "two")
    }

    @Test func stateOfAuthIsInStatsTimers() {
        let harness = BrokerHarness(authConfig([user("app", token: "t")]))
        let watcher = harness.connect(token: "t")
        _ = harness.connectRaw()
        #expect(harness.request(watcher, #"{"op":"stats"}"#)["timers"] as? Int == 1)
    }
}
