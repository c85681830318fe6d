import Foundation
import Testing
import HeraldBroker
@testable import HeraldServer
#if canImport(Glibc)
import Glibc
#endif

/// Auth against the real `heraldd`: the config's users, the gate before `hello`, the
/// timeout, the pre-auth line limit and SIGHUP revocation, over real sockets.
@Suite struct AuthServingTests {
    /// A config body with two users: `app` (hashed token, limited) and `dev` (plain token).
    private static func users(appSubscribe: String = #"allow: ["app.>"]"#) -> String {
        let hash = TokenCredential.hashLine(token: Array("app-secret".utf8), salt: [1, 2, 3, 4, 5, 6, 7, 8])
        return """
            auth: { users: [
              { name: "app", token_hash: "\(hash)", publish: { allow: ["app.>"] }, subscribe: { \(appSubscribe) } },
              { name: "dev", token: "dev-token" },
            ] }
            """
    }

    @Test func infoSaysAuthAndOnlyHelloAndPingComeFirst() throws {
        let daemon = try DaemonProcess(config: Self.users())
        let client = try TestClient(port: daemon.port)
        let info = try client.frame()["info"] as? [String: Any]
        #expect(info?["auth"] as? Bool == true)
        #expect(try client.request(#"{"op":"sub","ch":"app.x","rid":1}"#)["error"] as? String == "auth_required")
        #expect(try client.request(#"{"op":"ping","rid":2}"#)["pong"] != nil)
        #expect(try client.request(#"{"op":"hello","token":"app-secret"}"#)["ok"] as? String == "hello")
        #expect(try client.request(#"{"op":"sub","ch":"app.*","rid":3}"#)["ok"] as? String == "sub")
        let refused = try client.request(#"{"op":"sub","ch":">","rid":4}"#)
        #expect(refused["error"] as? String == "forbidden")
        #expect(try client.request(#"{"op":"ping","rid":5}"#)["rid"] as? Int == 5, "forbidden leaves the connection open")
        #expect(daemon.log.contains { $0.contains("plain token") && $0.contains("user=dev") })
    }

    @Test func wrongTokenIsForbiddenAndTheConnectionCloses() throws {
        let daemon = try DaemonProcess(config: Self.users())
        let client = try daemon.client()
        #expect(try client.request(#"{"op":"hello","token":"app-secreT"}"#)["error"] as? String == "forbidden")
        #expect(client.isClosedByPeer())
        let other = try daemon.client()
        #expect(try other.request(#"{"op":"hello","token":"dev-token"}"#)["ok"] as? String == "hello", "the daemon goes on")
    }

    @Test func connectionThatNeverAuthenticatesIsClosed() throws {
        let daemon = try DaemonProcess(config: Self.users() + ", auth_timeout_ms: 300")
        let client = try daemon.client()
        let frame = try client.frame(timeout: 10)
        #expect(frame["error"] as? String == "auth_required")
        #expect(client.isClosedByPeer(timeout: 10))
    }

    @Test func linesAreLimitedTo4KiBUntilAuthenticated() throws {
        let daemon = try DaemonProcess(config: Self.users())
        let client = try daemon.client()
        let payload = String(repeating: "x", count: 5_000)
        let big = #"{"op":"pub","ch":"app.x","data":""# + payload + #"","rid":1}"#
        let early = try client.request(big)
        #expect(early["error"] as? String == "line_too_long")
        #expect((early["message"] as? String)?.contains("4096") == true)
        #expect(try client.request(#"{"op":"hello","token":"app-secret"}"#)["ok"] as? String == "hello")
        #expect(try client.request(big)["ok"] as? String == "pub", "max_line applies once authenticated")
    }

    @Test func longLineRightBehindAGoodHelloInOneWriteIsAccepted() throws {
        let daemon = try DaemonProcess(config: Self.users())
        let client = try daemon.client()
        let payload = String(repeating: "y", count: 6_000)
        client.send(#"{"op":"hello","token":"app-secret"}"# + "\n" + #"{"op":"pub","ch":"app.x","data":""# + payload + #"","rid":2}"#)
        #expect(try client.frame()["ok"] as? String == "hello")
        #expect(try client.frame()["ok"] as? String == "pub", "the limit rises from the line after the hello")
    }

    @Test func sighupRevocationEndsASubscriptionAndClosesARemovedUser() throws {
        let daemon = try DaemonProcess(config: Self.users(appSubscribe: #"allow: ["app.>", "news.>"]"#))
        let app = try daemon.client()
        #expect(try app.request(#"{"op":"hello","token":"app-secret"}"#)["ok"] as? String == "hello")
        #expect(try app.request(#"{"op":"sub","ch":"news.>","sub":"news"}"#)["ok"] as? String == "sub")
        #expect(try app.request(#"{"op":"sub","ch":"app.>","sub":"mine"}"#)["ok"] as? String == "sub")
        let dev = try daemon.client()
        #expect(try dev.request(#"{"op":"hello","token":"dev-token"}"#)["ok"] as? String == "hello")
        let hash = TokenCredential.hashLine(token: Array("app-secret".utf8), salt: [9, 9])
        let reloaded = """
            { auth: { users: [
              { name: "app", token_hash: "\(hash)", subscribe: { allow: ["app.>"] } },
            ] } }
            """
        try reloaded.write(to: daemon.directory.appendingPathComponent("heraldd.json5"), atomically: true, encoding: .utf8)
        daemon.signal(SIGHUP)
        let removed = try app.frame(timeout: 10)
        #expect(removed["removed"] as? String == "news.>")
        #expect(removed["sub"] as? String == "news")
        #expect(removed["reason"] as? String == "forbidden")
        #expect(try dev.frame(timeout: 10)["error"] as? String == "forbidden")
        #expect(dev.isClosedByPeer())
        let subs = try app.request(#"{"op":"subs"}"#)["subs"] as? [[String: Any]]
        #expect(subs?.map { $0["sub"] as? String } == ["mine"], "the allowed one stays")
    }
}

/// The `auth` section's validation names the key, like every other config error.
@Suite struct AuthConfigTests {
    private func problem(_ text: String) -> String? {
        do {
            _ = try Config.decode(json5: Data(text.utf8), source: "h.json5")
            return nil
        } catch {
            return error.description
        }
    }

    @Test func usersDecodeWithHashesPlainTokensAndRules() throws {
        let hash = TokenCredential.hashLine(token: Array("tok".utf8), salt: [7, 7])
        let config = try Config.decode(json5: Data("""
            { auth: { users: [ { name: "a", token_hash: "\(hash)", publish: { allow: ["x.>"], deny: ["x.y"] } },
                               { name: "b", token: "plain" } ] }, auth_timeout_ms: 500, auth_max_line: 1024, max_locks: 9 }
            """.utf8), source: "h.json5")
        #expect(config.authUsers.count == 2)
        #expect(config.authUsers[0].credential.accepts(Array("tok".utf8)))
        #expect(config.authUsers[0].publish == ChannelRule(allow: [Array("x.>".utf8)], deny: [Array("x.y".utf8)]))
        #expect(config.authUsers[0].subscribe.isUnrestricted)
        #expect(config.authUsers[1].isPlainToken && config.plainTokenUsers == ["b"])
        #expect(config.authTimeoutMs == 500 && config.authMaxLine == 1024 && config.maxLocks == 9)
        let tunables = Server.brokerConfig(from: config, epoch: "e")
        #expect(tunables.auth.isEnabled && tunables.auth.timeoutMs == 500 && tunables.auth.maxLine == 1024)
        #expect(tunables.maxLocks == 9)
    }

    /// Whether a slow credential accepts `token`, deriving the key as the daemon does.
    private func slowAccepts(_ credential: TokenCredential, _ token: String) -> Bool {
        guard let iterations = credential.iterations,
              let key = PBKDF2.sha256(token: Array(token.utf8), salt: credential.salt, iterations: iterations) else { return false }
        return credential.matches(derivedKey: key)
    }

    @Test func hashTokenPrintsAFreshlySaltedPBKDF2Line() throws {
        let one = try #require(Config.hashToken("s3cr*t", iterations: 1_000))
        let two = try #require(Config.hashToken("s3cr*t", iterations: 1_000))
        #expect(one != two, "a new salt each time")
        #expect(one.hasPrefix("pbkdf2-sha256:1000:") && one.split(separator: ":").map(\.count) == [13, 4, 32, 64])
        let credential = try #require(TokenCredential(hash: one))
        #expect(slowAccepts(credential, "s3cr*t") && !slowAccepts(credential, "s3cr*T"))
    }

    @Test func hashTokenFlagPrintsAPBKDF2LineWithTheDefaultIterations() throws {
        #expect(try CommandLineOptions.parse(["--hash-token", "a b"]).hashToken == "a b")
        let result = try runDaemon(["--hash-token", "to*k>en"])
        #expect(result.status == 0)
        let line = result.output.trimmingCharacters(in: .whitespacesAndNewlines)
        let credential = try #require(TokenCredential(hash: line), "\(line)")
        #expect(credential.iterations == Config.hashIterations && credential.salt.count == 16)
        #expect(slowAccepts(credential, "to*k>en"))
        #expect(!slowAccepts(credential, "to*k>eN"))
    }

    /// PBKDF2-HMAC-SHA256 from libcrypto against RFC 7914 section 11's test vectors
    /// (truncated to the 32 bytes a `token_hash` keeps).
    @Test func pbkdf2MatchesTheRFC7914Vectors() throws {
        let one = try #require(PBKDF2.sha256(token: Array("passwd".utf8), salt: Array("salt".utf8), iterations: 1))
        #expect(SHA256.hex(one) == "55ac046e56e3089fec1691c22544b605f94185216dde0465e68b9d57c20dacbc")
        let many = try #require(PBKDF2.sha256(token: Array("Password".utf8), salt: Array("NaCl".utf8), iterations: 80_000))
        #expect(SHA256.hex(many) == "4ddcd8f60b98be21830cee5ef22701f9641a4418d04c0414aeff08876b34ab56")
    }

    @Test(arguments: [
        (#"{ auth: 3 }"#, #"bad value for "auth""#),
        (#"{ auth: { user: [] } }"#, #"unknown key "auth.user""#),
        (#"{ auth: { users: {} } }"#, #""auth.users": expected an array"#),
        (#"{ auth: { users: [ 1 ] } }"#, #""auth.users[0]": expected an object"#),
        (#"{ auth: { users: [ { token: "t" } ] } }"#, #""auth.users[0].name""#),
        (#"{ auth: { users: [ { name: "a" } ] } }"#, #""auth.users[0]": give exactly one of token_hash and token"#),
        (#"{ auth: { users: [ { name: "a", token: "t", token_hash: "sha256::00" } ] } }"#, "give exactly one"),
        (#"{ auth: { users: [ { name: "a", token_hash: "md5:00:00" } ] } }"#, #""auth.users[0].token_hash""#),
        (#"{ auth: { users: [ { name: "a", token: "" } ] } }"#, #""auth.users[0].token""#),
        (#"{ auth: { users: [ { name: "a", token: "t", tokn: 1 } ] } }"#, #"unknown key "auth.users[0].tokn""#),
        (#"{ auth: { users: [ { name: "a", token: "t" }, { name: "a", token: "u" } ] } }"#, #""auth.users[1].name": "a" is given twice"#),
        (#"{ auth: { users: [ { name: "a", token: "t", publish: { allow: ["a..b"] } } ] } }"#, #""auth.users[0].publish.allow[0]""#),
        (#"{ auth: { users: [ { name: "a", token: "t", subscribe: { deny: "x" } } ] } }"#, #""auth.users[0].subscribe.deny""#),
        (#"{ auth: { users: [ { name: "a", token: "t", subscribe: { only: [] } } ] } }"#, #"unknown key "auth.users[0].subscribe.only""#),
        (#"{ auth_timeout_ms: 5 }"#, #"bad value for "auth_timeout_ms""#),
        (#"{ auth_max_line: 10 }"#, #"bad value for "auth_max_line""#),
        (#"{ max_locks: 0 }"#, #"bad value for "max_locks""#),
        (#"{ auth: { users: [ { name: "a", token_hash: "pbkdf2-sha256:10:0011223344556677:00" } ] } }"#,
         #""auth.users[0].token_hash": expected "pbkdf2-sha256:<iterations>"#),
        (#"{ max_unauthenticated: 0 }"#, #"bad value for "max_unauthenticated""#),
        (#"{ auth_fail_limit: 0 }"#, #"bad value for "auth_fail_limit""#),
        (#"{ auth_fail_window_ms: 5 }"#, #"bad value for "auth_fail_window_ms""#),
        (#"{ auth_block_ms: "1m" }"#, #"bad value for "auth_block_ms""#),
        (#"{ user_limits: 3 }"#, #"bad value for "user_limits""#),
        (#"{ user_limits: { conections: 3 } }"#, #"unknown key "user_limits.conections""#),
        (#"{ user_limits: { connections: 0 } }"#, #""user_limits.connections": expected a positive integer"#),
        (#"{ auth: { users: [ { name: "a", token: "t", limits: { channels: 1.5 } } ] } }"#,
         #""auth.users[0].limits.channels": expected a positive integer"#),
        (#"{ auth: { users: [ { name: "a", token: "t", limits: { max: 1 } } ] } }"#, #"unknown key "auth.users[0].limits.max""#),
        (#"{ auth: { users: [ { name: "a", token: "t", limits: [] } ] } }"#, #""auth.users[0].limits": expected an object"#),
    ])
    func badAuthConfigNamesTheKey(text: String, expected: String) {
        let message = problem(text)
        #expect(message?.hasPrefix("h.json5: ") == true, "\(text)")
        #expect(message?.contains(expected) == true, "\(text): \(message ?? "accepted")")
    }

    @Test func userLimitsSetEveryUsersDefaultsAndAUsersOwnLimitsOverrideSome() throws {
        let config = try Config.decode(json5: Data("""
            { user_limits: { connections: 7, subscriptions: 70, channels: 700, retained_bytes: 7000,
                             history_bytes: 70000, pending_bytes: 700000 },
              max_unauthenticated: 50, auth_fail_limit: 3, auth_fail_window_ms: 2000, auth_block_ms: 9000,
              auth: { users: [ { name: "a", token: "t" }, { name: "b", token: "u", limits: { connections: 2, pending_bytes: 9 } } ] } }
            """.utf8), source: "h.json5")
        let shared = UserLimits(connections: 7, subscriptions: 70, channels: 700, retainedBytes: 7000,
                                historyBytes: 70000, pendingBytes: 700000)
        #expect(config.userLimits == shared && config.authUsers[0].limits == shared)
        var own = shared
        own.connections = 2
        own.pendingBytes = 9
        #expect(config.authUsers[1].limits == own)
        let tunables = Server.brokerConfig(from: config, epoch: "e")
        #expect(tunables.auth.maxUnauthenticated == 50 && tunables.auth.failLimit == 3)
        #expect(tunables.auth.failWindowMs == 2000 && tunables.auth.blockMs == 9000)
        #expect(Config().reloadingLive(from: config).authUsers[1].limits == own, "applied on SIGHUP")
        #expect(Config().reloadingLive(from: config).maxUnauthenticated == 50)
        #expect(Config().authUsers.isEmpty && Config().maxUnauthenticated == 1_000 && Config().authFailLimit == 10)
    }
}
