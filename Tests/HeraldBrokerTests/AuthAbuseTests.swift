import Foundation
import Testing
import HeraldBroker
import HeraldWire

/// A stand-in for PBKDF2 (the broker never computes the slow KDF; the server does, off the
/// loop): SHA-256 of salt, token and the iteration count. What matters here is which
/// credential it makes match, not how slow it is.
let fakeDerive: PendingVerification.KeyDerivation = { token, salt, iterations in
    SHA256.hash(salt + token + Array(String(iterations).utf8))
}

/// A user whose token only the slow KDF can check, as a `pbkdf2-sha256` `token_hash` is.
func slowUser(_ name: String, token: String, limits: UserLimits = UserLimits()) -> AuthUser {
    let salt = Array((name + "-salt").utf8)
    let credential = TokenCredential(scheme: .pbkdf2SHA256(iterations: 1_000), salt: salt,
                                     digest: fakeDerive(Array(token.utf8), salt, 1_000) ?? [])
    return AuthUser(name: name, credential: credential, limits: limits)
}

extension BrokerHarness {
    /// Plays the server for a parked `hello`: takes it, runs the KDF, hands back the verdict.
    /// - Returns: whether a verification was waiting.
    @discardableResult
    func verify(_ session: Session) -> Bool {
        guard let pending = broker.takeVerification(for: session) else { return false }
        broker.completeVerification(of: session, accepted: pending.verify(derive: fakeDerive), now: now)
        return true
    }

    /// A new connection from `peer`, its `info` discarded.
    func connect(from peer: String) -> Session {
        let session = connect()
        session.peer = Array(peer.utf8)
        return session
    }

    /// The `stats` figure `name`, read through the broker's own list.
    func figure(_ name: String) -> Int? {
        broker.statsFigures(now: now).first { $0.name == name }?.value
    }
}

/// `pbkdf2-sha256` tokens (issue 12): the `hello` is parked, verified off the loop by the
/// server, answered as before; successes are cached, failures never.
@Suite struct SlowVerificationTests {
    @Test func slowTokenParksTheHelloUntilTheVerdictThenAnswersItWithItsRid() {
        let harness = BrokerHarness(authConfig([slowUser("app", token: "s3cret")]))
        let s = harness.connect()
        harness.send(s, #"{"op":"hello","token":"s3cret","name":"me","echo":false,"rid":"h1"}"#)
        #expect(harness.frames(s).isEmpty, "nothing is answered before the verdict")
        #expect(s.awaitsVerification && !s.isAuthenticated)
        let pending = harness.broker.takeVerification(for: s)
        #expect(pending?.token == Array("s3cret".utf8))
        #expect(harness.broker.takeVerification(for: s) == nil, "taken once")
        harness.broker.completeVerification(of: s, accepted: pending?.verify(derive: fakeDerive) ?? [], now: 0)
        let answer = harness.frames(s)
        #expect(answer.count == 1)
        #expect(answer.first?["ok"] as? String == "hello")
        #expect(answer.first?["rid"] as? String == "h1")
        #expect(!s.awaitsVerification && s.isAuthenticated && s.user?.name == "app")
        #expect(s.name == Array("me".utf8) && !s.echo)
    }

    @Test func wrongSlowTokenIsForbiddenAndClosedAfterTheVerdict() {
        let harness = BrokerHarness(authConfig([slowUser("app", token: "s3cret")]))
        let s = harness.connect()
        harness.send(s, #"{"op":"hello","token":"guess","rid":7}"#)
        #expect(harness.frames(s).isEmpty)
        #expect(harness.verify(s))
        let answer = harness.frames(s)
        #expect(answer.first?["error"] as? String == "forbidden")
        #expect(answer.first?["op"] as? String == "hello" && answer.first?["rid"] as? Int == 7)
        #expect(s.closeAfterFlush && !s.isAuthenticated)
        #expect(harness.figure("auth_failures") == 1)
    }

    @Test func fastCredentialsAreSettledAtOnceBesideSlowOnes() {
        let harness = BrokerHarness(authConfig([slowUser("slow", token: "a"), user("fast", token: "b")]))
        let s = harness.connect()
        #expect(harness.request(s, #"{"op":"hello","token":"b"}"#)["ok"] as? String == "hello")
        #expect(s.user?.name == "fast" && !s.awaitsVerification)
    }

    @Test func aVerifiedTokenIsCachedAndAWrongOneNever() {
        let harness = BrokerHarness(authConfig([slowUser("app", token: "s3cret")]))
        let first = harness.connect()
        harness.send(first, #"{"op":"hello","token":"s3cret"}"#)
        #expect(harness.verify(first))
        #expect(harness.frames(first).first?["ok"] as? String == "hello")
        let second = harness.connect()
        #expect(harness.request(second, #"{"op":"hello","token":"s3cret"}"#)["ok"] as? String == "hello",
                "a known token is answered without parking")
        #expect(!second.awaitsVerification && second.user?.name == "app")
        for _ in 0..<2 {
            let wrong = harness.connect()
            harness.send(wrong, #"{"op":"hello","token":"nope"}"#)
            #expect(wrong.awaitsVerification, "a failure is verified every time")
            #expect(harness.verify(wrong))
        }
    }

    @Test func aVerifiedTokenOfAHelloThatNamedItsUserIsCachedToo() {
        let harness = BrokerHarness(authConfig([slowUser("app", token: "s3cret"), slowUser("other", token: "x")]))
        let first = harness.connect()
        harness.send(first, #"{"op":"hello","user":"app","token":"s3cret"}"#)
        #expect(harness.verify(first))
        #expect(harness.frames(first).first?["ok"] as? String == "hello")
        for hello in [#"{"op":"hello","user":"app","token":"s3cret"}"#, #"{"op":"hello","token":"s3cret"}"#] {
            let again = harness.connect()
            #expect(harness.request(again, hello)["ok"] as? String == "hello", "\(hello) is answered without parking")
            #expect(!again.awaitsVerification && again.user?.name == "app")
        }
    }

    @Test func helloesWithATokenAlreadyBeingVerifiedWaitForThatOneVerdict() {
        let harness = BrokerHarness(authConfig([slowUser("app", token: "s3cret")]))
        let first = harness.connect()
        let second = harness.connect()
        let guess = harness.connect()
        harness.send(first, #"{"op":"hello","token":"s3cret","rid":1}"#)
        harness.send(second, #"{"op":"hello","token":"s3cret","rid":2}"#)
        harness.send(guess, #"{"op":"hello","token":"other"}"#)
        let pending = harness.broker.takeVerification(for: first)
        #expect(harness.broker.takeVerification(for: second) == nil, "no KDF of its own")
        #expect(second.awaitsVerification, "but its lines are held all the same")
        #expect(harness.broker.takeVerification(for: guess) != nil, "another token gets its own")
        let followers = harness.broker.completeVerification(of: first, accepted: pending?.verify(derive: fakeDerive) ?? [], now: 0)
        #expect(followers.map(\.id) == [second.id])
        #expect(harness.frames(first).first?["rid"] as? Int == 1)
        let answer = harness.frames(second).first
        #expect(answer?["ok"] as? String == "hello" && answer?["rid"] as? Int == 2)
        #expect(!second.awaitsVerification && second.user?.name == "app")
        let third = harness.connect()
        harness.send(third, #"{"op":"hello","token":"s3cret"}"#)
        #expect(!third.awaitsVerification, "and later ones hit the cache")
    }

    @Test func aParkedHelloOutlivesTheAuthDeadline() {
        let harness = BrokerHarness(authConfig([slowUser("app", token: "s3cret")], timeoutMs: 500))
        let s = harness.connect()
        harness.send(s, #"{"op":"hello","token":"s3cret"}"#)
        _ = harness.broker.tick(now: 600)
        #expect(!s.closeAfterFlush && harness.frames(s).isEmpty, "the delay is the daemon's, not the peer's")
        harness.now = 600
        #expect(harness.verify(s))
        #expect(harness.frames(s).first?["ok"] as? String == "hello")
    }

    @Test func theVerdictForAConnectionThatLeftStillCountsAsAFailure() {
        let harness = BrokerHarness(authConfig([slowUser("app", token: "s3cret")]))
        let s = harness.connect(from: "10.0.0.9")
        harness.send(s, #"{"op":"hello","token":"guess"}"#)
        let pending = harness.broker.takeVerification(for: s)
        harness.broker.disconnect(s)
        harness.broker.completeVerification(of: s, accepted: pending?.verify(derive: fakeDerive) ?? [], now: 0)
        #expect(harness.frames(s).isEmpty)
        #expect(harness.figure("auth_failures") == 1)
        #expect(harness.broker.takeAuthEvents().first == AuthEvent(.rejected(failures: 1), client: "c1", peer: "10.0.0.9"))
    }

    @Test func aBadNameInAParkedHelloIsAnsweredOnceAuthenticated() {
        let harness = BrokerHarness(authConfig([slowUser("app", token: "s3cret")]))
        let s = harness.connect()
        let long = String(repeating: "n", count: 256)
        harness.send(s, #"{"op":"hello","token":"s3cret","name":"\#(long)","rid":3}"#)
        #expect(harness.verify(s))
        let answer = harness.frames(s)
        #expect(answer.first?["error"] as? String == "bad_field" && answer.first?["rid"] as? Int == 3)
        #expect(s.isAuthenticated, "the token was good, as on the inline path")
    }

    @Test func aReloadBetweenHelloAndVerdictIsHonoured() {
        let harness = BrokerHarness(authConfig([slowUser("app", token: "s3cret"), user("other", token: "o")]))
        let s = harness.connect()
        harness.send(s, #"{"op":"hello","token":"s3cret"}"#)
        let pending = harness.broker.takeVerification(for: s)
        harness.broker.config.auth = AuthSettings(users: [user("other", token: "o")])
        harness.broker.applyAuthSettings(now: 0)
        harness.broker.completeVerification(of: s, accepted: pending?.verify(derive: fakeDerive) ?? [], now: 0)
        #expect(harness.frames(s).first?["error"] as? String == "forbidden", "the user was removed meanwhile")
    }

    @Test func reloadKeepsSlowSessionsWhoseCredentialIsUnchangedWithoutAKDF() {
        let harness = BrokerHarness(authConfig([slowUser("app", token: "s3cret"), slowUser("gone", token: "g")]))
        let app = harness.connect()
        harness.send(app, #"{"op":"hello","token":"s3cret"}"#)
        harness.verify(app)
        let gone = harness.connect()
        harness.send(gone, #"{"op":"hello","token":"g"}"#)
        harness.verify(gone)
        _ = harness.frames(app) + harness.frames(gone)
        let renamed = AuthUser(name: "app2", credential: slowUser("app", token: "s3cret").credential)
        harness.broker.config.auth = AuthSettings(users: [renamed, slowUser("gone", token: "changed")])
        harness.broker.applyAuthSettings(now: 0)
        #expect(!app.closeAfterFlush && app.user?.name == "app2", "same credential, new name")
        #expect(gone.closeAfterFlush, "its credential changed")
        #expect(harness.broker.connectionCount(ofUser: "app2") == 1 && harness.broker.connectionCount(ofUser: "app") == 0)
    }

    @Test func pbkdf2TokenHashLinesParseAndBadOnesAreRefused() throws {
        let salt = String(repeating: "ab", count: 16)
        let key = String(repeating: "0f", count: 32)
        let parsed = try #require(TokenCredential(hash: "pbkdf2-sha256:100000:\(salt):\(key)"))
        #expect(parsed.iterations == 100_000 && parsed.isSlow && parsed.salt.count == 16)
        #expect(parsed.line == "pbkdf2-sha256:100000:\(salt):\(key)")
        #expect(!parsed.accepts(Array("anything".utf8)), "the broker never runs the KDF")
        for bad in ["pbkdf2-sha256:999:\(salt):\(key)", "pbkdf2-sha256:10000001:\(salt):\(key)",
                    "pbkdf2-sha256:+1000:\(salt):\(key)", "pbkdf2-sha256:1000:abab:\(key)",
                    "pbkdf2-sha256:1000:\(salt):\(key)00", "pbkdf2-sha256:1000:\(salt)", "pbkdf2-sha512:1000:\(salt):\(key)"] {
            #expect(TokenCredential(hash: bad) == nil, "\(bad)")
        }
        #expect(TokenCredential(hash: "sha256:\(salt):\(key)")?.isSlow == false, "the old form still parses")
    }
}

/// Failed `hello`s per address (issue 12): counted, and too many within the window block
/// the address for a while; the table of addresses is bounded.
@Suite struct FailedHelloTests {
    private func harness(limit: Int = 3, windowMs: Int = 1_000, blockMs: Int = 5_000, capacity: Int = 10_000) -> BrokerHarness {
        var config = authConfig([user("app", token: "right")])
        config.auth.failLimit = limit
        config.auth.failWindowMs = windowMs
        config.auth.blockMs = blockMs
        config.auth.failureTableCapacity = capacity
        return BrokerHarness(config)
    }

    private func hello(_ harness: BrokerHarness, from peer: String, token: String) -> [String: Any] {
        let s = harness.connect(from: peer)
        return harness.request(s, #"{"op":"hello","token":"\#(token)"}"#)
    }

    @Test func tooManyFailuresBlockTheAddressThenItMayTryAgain() {
        let harness = harness()
        for _ in 0..<3 { #expect(hello(harness, from: "10.0.0.1", token: "guess")["error"] as? String == "forbidden") }
        let s = harness.connect(from: "10.0.0.1")
        let refused = harness.request(s, #"{"op":"hello","token":"right","rid":1}"#)
        #expect(refused["error"] as? String == "too_many_attempts" && refused["rid"] as? Int == 1,
                "refused at once, even with the right token")
        #expect(s.closeAfterFlush)
        #expect(hello(harness, from: "10.0.0.2", token: "right")["ok"] as? String == "hello", "other addresses are not affected")
        harness.now = 4_999
        #expect(hello(harness, from: "10.0.0.1", token: "right")["error"] as? String == "too_many_attempts")
        harness.now = 5_000
        #expect(hello(harness, from: "10.0.0.1", token: "right")["ok"] as? String == "hello")
        #expect(harness.figure("auth_failures") == 3 && harness.figure("auth_blocked") == 2)
        let events = harness.broker.takeAuthEvents().map(\.kind)
        #expect(events.contains(.blocked(failures: 3, blockMs: 5_000)))
        #expect(events.filter { $0 == .refusedWhileBlocked }.count == 2)
    }

    @Test func failuresOutsideTheWindowDoNotAddUp() {
        let harness = harness()
        for _ in 0..<2 { _ = hello(harness, from: "10.0.0.1", token: "guess") }
        harness.now = 1_000
        for _ in 0..<2 { _ = hello(harness, from: "10.0.0.1", token: "guess") }
        #expect(hello(harness, from: "10.0.0.1", token: "right")["ok"] as? String == "hello")
    }

    @Test func aHelloWithoutATokenIsNoGuessAndNotRefusedByTheBlock() {
        let harness = harness(limit: 1)
        _ = hello(harness, from: "10.0.0.1", token: "guess")
        let s = harness.connect(from: "10.0.0.1")
        #expect(harness.request(s, #"{"op":"hello","name":"x"}"#)["error"] as? String == "auth_required")
        #expect(!s.closeAfterFlush && harness.figure("auth_failures") == 1)
    }

    @Test func theTableForgetsTheOldestAddressWhenFull() {
        let harness = harness(limit: 1, capacity: 2)
        _ = hello(harness, from: "10.0.0.1", token: "guess")
        #expect(hello(harness, from: "10.0.0.1", token: "right")["error"] as? String == "too_many_attempts")
        _ = hello(harness, from: "10.0.0.2", token: "guess")
        _ = hello(harness, from: "10.0.0.3", token: "guess")
        #expect(hello(harness, from: "10.0.0.1", token: "right")["ok"] as? String == "hello", "10.0.0.1 was pushed out")
        #expect(hello(harness, from: "10.0.0.3", token: "right")["error"] as? String == "too_many_attempts")
    }

    @Test func slowVerdictsCountTowardTheBlockToo() {
        var config = authConfig([slowUser("app", token: "right")])
        config.auth.failLimit = 2
        let harness = BrokerHarness(config)
        let parked = (0..<3).map { _ in harness.connect(from: "10.0.0.7") }
        for s in parked { harness.send(s, #"{"op":"hello","token":"guess"}"#) }
        #expect(harness.verify(parked[0]), "one KDF for the one token")
        #expect(harness.figure("auth_failures") == 3, "but every guess counts")
        #expect(parked.allSatisfy { $0.closeAfterFlush })
        #expect(hello(harness, from: "10.0.0.7", token: "right")["error"] as? String == "too_many_attempts")
    }
}

/// Guessing by concurrency and lock-out by a guesser (issue 32, item 4): tokens being
/// verified hold an attempt each, so `hello`s sent at once get no more checks than the limit;
/// `hello` with `user` counts against the address and that user, so a guesser at one user (or
/// without `user`) does not lock the others out of a shared address.
@Suite struct ConcurrentGuessTests {
    private func harness(limit: Int = 10) -> BrokerHarness {
        var config = authConfig([slowUser("alice", token: "alice-token"), slowUser("bob", token: "bob-token")])
        config.auth.failLimit = limit
        config.auth.failWindowMs = 60_000
        config.auth.blockMs = 60_000
        config.auth.maxUnauthenticated = 10_000
        return BrokerHarness(config)
    }

    @Test func helloesSentAtOnceGetNoMoreChecksThanTheLimit() {
        let harness = harness()
        let guesses = (0..<2_000).map { _ in harness.connect(from: "10.0.0.9") }
        for (n, s) in guesses.enumerated() { harness.send(s, #"{"op":"hello","token":"guess-\#(n)"}"#) }
        let checked = guesses.filter { harness.broker.takeVerification(for: $0) != nil }
        #expect(checked.count == 10, "one KDF per attempt the address has, however many arrive at once")
        let refused = guesses.filter { s in harness.frames(s).first?["error"] as? String == "too_many_attempts" }
        #expect(refused.count == 1_990 && refused.allSatisfy(\.closeAfterFlush))
        #expect(harness.figure("auth_blocked") == 1_990)
    }

    @Test func aCheckUnderWayGivesItsAttemptBackWhenItsTokenIsRight() {
        let harness = harness(limit: 2)
        let right = harness.connect(from: "10.0.0.9")
        let wrong = harness.connect(from: "10.0.0.9")
        harness.send(right, #"{"op":"hello","token":"alice-token"}"#)
        harness.send(wrong, #"{"op":"hello","token":"guess"}"#)
        let third = harness.connect(from: "10.0.0.9")
        harness.send(third, #"{"op":"hello","token":"guess-2"}"#)
        #expect(harness.frames(third).first?["error"] as? String == "too_many_attempts", "two checks under way: none left")
        #expect(harness.verify(right) && harness.verify(wrong))
        #expect(right.isAuthenticated && wrong.closeAfterFlush)
        let fourth = harness.connect(from: "10.0.0.9")
        harness.send(fourth, #"{"op":"hello","token":"bob-token"}"#)
        #expect(harness.verify(fourth) && fourth.isAuthenticated, "one failure counted, one attempt left")
    }

    /// `count` wrong `hello`s from the Unix socket, naming `user` (nil: none), each verified.
    private func wrongHellos(_ harness: BrokerHarness, _ count: Int, user: String?) {
        for n in 0..<count {
            let s = harness.connect(from: "unix")
            let named = user.map { #""user":"\#($0)","# } ?? ""
            harness.send(s, #"{"op":"hello",\#(named)"token":"guess-\#(n)"}"#)
            #expect(harness.verify(s) && s.closeAfterFlush)
        }
    }

    /// The error a `hello` from the Unix socket is answered at once (nil: none yet).
    private func hello(_ harness: BrokerHarness, user: String?, token: String) -> String? {
        let s = harness.connect(from: "unix")
        let named = user.map { #""user":"\#($0)","# } ?? ""
        harness.send(s, #"{"op":"hello",\#(named)"token":"\#(token)"}"#)
        return harness.frames(s).first?["error"] as? String
    }

    @Test func aGuesserAtOneUserDoesNotLockOutAnotherUserAtTheSameAddress() {
        let harness = harness(limit: 3)
        wrongHellos(harness, 3, user: "alice")
        #expect(hello(harness, user: "alice", token: "alice-token") == "too_many_attempts", "alice at this address is blocked")
        let bob = harness.connect(from: "unix")
        harness.send(bob, #"{"op":"hello","user":"bob","token":"bob-token"}"#)
        #expect(harness.verify(bob) && bob.isAuthenticated, "bob is not")
        let anonymous = harness.connect(from: "unix")
        harness.send(anonymous, #"{"op":"hello","token":"bob-token"}"#)
        // Bob's token is known now (cached when bob's hello was verified): no KDF, no block.
        #expect(!harness.verify(anonymous) && anonymous.isAuthenticated, "nor are hellos without a user")
    }

    @Test func aGuesserWithoutAUserDoesNotLockOutHelloesThatNameTheirUser() {
        let harness = harness(limit: 2)
        wrongHellos(harness, 2, user: nil)
        #expect(hello(harness, user: nil, token: "alice-token") == "too_many_attempts")
        let alice = harness.connect(from: "unix")
        harness.send(alice, #"{"op":"hello","user":"alice","token":"alice-token"}"#)
        #expect(harness.verify(alice) && alice.isAuthenticated)
    }

    @Test func aNamedUserIsCheckedAgainstItsOwnCredentialOnly() {
        let harness = harness()
        let s = harness.connect(from: "10.0.0.9")
        harness.send(s, #"{"op":"hello","user":"alice","token":"bob-token"}"#)
        let pending = harness.broker.takeVerification(for: s)
        #expect(pending?.credentials.count == 1, "one KDF, not one per user")
        harness.broker.completeVerification(of: s, accepted: pending?.verify(derive: fakeDerive) ?? [], now: 0)
        #expect(harness.frames(s).first?["error"] as? String == "forbidden", "bob's token does not make alice")
        let unknown = harness.connect(from: "10.0.0.9")
        harness.send(unknown, #"{"op":"hello","user":"mallory","token":"bob-token"}"#)
        #expect(harness.broker.takeVerification(for: unknown) == nil)
        #expect(harness.frames(unknown).first?["error"] as? String == "forbidden", "an unknown user is a wrong token")
    }
}

/// `max_unauthenticated` (issue 12): strangers get their own, smaller share of the
/// connections; past it the oldest stranger goes, so silent sockets cannot lock out clients.
@Suite struct UnauthenticatedCapTests {
    @Test func pastTheCapTheOldestUnauthenticatedConnectionIsClosed() {
        var config = authConfig([user("app", token: "t")])
        config.auth.maxUnauthenticated = 2
        let harness = BrokerHarness(config)
        let member = harness.connect(token: "t")
        let first = harness.connect()
        let second = harness.connect()
        #expect(harness.figure("unauthenticated") == 2)
        let third = harness.connect()
        let told = harness.frames(first)
        #expect(told.first?["error"] as? String == "limit")
        #expect((told.first?["message"] as? String)?.contains("max_unauthenticated 2") == true)
        #expect(first.closeAfterFlush && !second.closeAfterFlush && !third.closeAfterFlush && !member.closeAfterFlush)
        #expect(harness.request(third, #"{"op":"hello","token":"t"}"#)["ok"] as? String == "hello", "the newcomer works")
        #expect(harness.figure("unauthenticated") == 1)
    }

    @Test func turningAuthOffForgetsTheStrangers() {
        let harness = BrokerHarness(authConfig([user("app", token: "t")]))
        _ = harness.connect()
        harness.broker.config.auth = AuthSettings()
        harness.broker.applyAuthSettings(now: 0)
        #expect(harness.figure("unauthenticated") == 0)
    }
}

/// `UserLimits.connections` (issue 12): connections per user, charged at authentication,
/// released when they leave.
@Suite struct UserConnectionLimitTests {
    @Test func aHelloPastTheUsersConnectionsIsRefusedWithLimit() {
        var limits = UserLimits()
        limits.connections = 2
        let harness = BrokerHarness(authConfig([user("app", token: "t", limits: limits), user("other", token: "o")]))
        let one = harness.connect(token: "t")
        _ = harness.connect(token: "t")
        let third = harness.connect()
        let refused = harness.request(third, #"{"op":"hello","token":"t","rid":9}"#)
        #expect(refused["error"] as? String == "limit" && refused["rid"] as? Int == 9)
        #expect(third.closeAfterFlush && !third.isAuthenticated)
        #expect(harness.broker.connectionCount(ofUser: "app") == 2)
        let other = harness.connect()
        #expect(harness.request(other, #"{"op":"hello","token":"o"}"#)["ok"] as? String == "hello", "other users are not affected")
        harness.broker.disconnect(one)
        let again = harness.connect()
        #expect(harness.request(again, #"{"op":"hello","token":"t"}"#)["ok"] as? String == "hello", "a place came free")
    }

    @Test func accountsFollowConnectionsAndAreDroppedWhenEmpty() {
        let harness = BrokerHarness(authConfig([user("a", token: "ta"), user("b", token: "tb")]))
        let s = harness.connect(token: "ta")
        #expect(harness.broker.connectionCount(ofUser: "a") == 1)
        #expect(harness.request(s, #"{"op":"hello","token":"ta"}"#)["ok"] as? String == "hello")
        #expect(harness.broker.connectionCount(ofUser: "a") == 1, "the same user again is not charged twice")
        #expect(harness.request(s, #"{"op":"hello","token":"tb"}"#)["ok"] as? String == "hello")
        #expect(harness.broker.connectionCount(ofUser: "a") == 0 && harness.broker.connectionCount(ofUser: "b") == 1)
        harness.send(s, #"{"op":"hello","token":"wrong"}"#)
        #expect(s.closeAfterFlush)
        #expect(harness.broker.connectionCount(ofUser: "b") == 0, "released when the connection leaves")
    }
}

func user(_ name: String, token: String, limits: UserLimits) -> AuthUser {
    var made = user(name, token: token)
    made.limits = limits
    return made
}
