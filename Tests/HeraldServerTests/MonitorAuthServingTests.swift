import Foundation
import Testing
@testable import HeraldServer
#if canImport(Glibc)
import Glibc
#endif

/// The locked monitor (issue 37, item 2; `monitor_auth: true`): every path but `/healthz`
/// needs HTTP Basic credentials of an admin user, judged on the books `hello` keeps.
@Suite struct MonitorAuthServingTests {
    /// `ops` is an admin with a plain token, `app` is not; `slow` is an admin whose token
    /// only PBKDF2 can judge.
    private static func users(slowHash: String? = nil, failLimit: Int = 10) -> String {
        let slow = slowHash.map { #", { name: "slow", token_hash: "\#($0)", admin: true }"# } ?? ""
        return """
            monitor_port: 0, monitor_auth: true, auth_fail_limit: \(failLimit),
            auth: { users: [
              { name: "ops", token: "ops-token", admin: true },
              { name: "app", token: "app-token" }\(slow)
            ] }
            """
    }

    private func get(_ path: String, _ port: Int, _ user: String?, _ token: String = "") throws -> HTTPTestClient.Answer {
        try HTTPTestClient.request("GET", path, port: port, user: user, token: token)
    }

    @Test func everyPathButHealthzNeedsAnAdminsCredentials() throws {
        let daemon = try DaemonProcess(config: Self.users())
        let port = try daemon.monitorPort()
        for path in ["/varz", "/metrics", "/nope"] {
            let none = try get(path, port, nil)
            #expect(none.status == 401, "\(path)")
            #expect(none.headers["www-authenticate"]?.hasPrefix(#"Basic realm="heraldd""#) == true, "\(path)")
        }
        #expect(try get("/healthz", port, nil).status == 200)
        #expect(try get("/varz", port, "ops", "ops-token").status == 200)
        #expect(try get("/metrics", port, "ops", "ops-token").body.contains("herald_connections"))
        #expect(try get("/nope", port, "ops", "ops-token").status == 404, "an admin learns the path is unknown")
        #expect(try get("/varz", port, "app", "app-token").status == 403, "a right token of a user who is not an admin")
        #expect(try get("/varz", port, "ops", "app-token").status == 401, "a wrong token")
        #expect(try get("/varz", port, "nobody", "ops-token").status == 401, "an unknown user")
        let garbled = try HTTPTestClient(port: port)
        garbled.send("GET /varz HTTP/1.1\r\nHost: x\r\nAuthorization: Basic %%%\r\n\r\n")
        #expect(try garbled.answer().status == 401)
        #expect(daemon.waitForLog("monitor request refused: token not accepted"), "logged (stderr is read asynchronously)")
    }

    @Test func withoutMonitorAuthTheMonitorStaysOpen() throws {
        let daemon = try DaemonProcess(config: #"monitor_port: 0, auth: { users: [ { name: "ops", token: "t", admin: true } ] }"#)
        #expect(try get("/varz", try daemon.monitorPort(), nil).status == 200)
    }

    @Test func monitorAuthWithoutAnAdminUserIsAConfigError() throws {
        let noAdmin = #"{ monitor_auth: true, auth: { users: [ { name: "app", token: "t" } ] } }"#
        #expect(throws: ConfigError.self) { try Config.decode(json5: Data(noAdmin.utf8), source: "x.json5") }
        let noUsers = #"{ monitor_auth: true }"#
        do {
            _ = try Config.decode(json5: Data(noUsers.utf8), source: "x.json5")
            Issue.record("accepted monitor_auth without users")
        } catch {
            #expect(error.description.contains("monitor_auth") && error.description.contains("admin"), "\(error)")
        }
        #expect(try Config.decode(json5: Data(#"{ monitor_auth: false }"#.utf8), source: "x").monitorAuth == false)
        #expect(throws: ConfigError.self) { try Config.decode(json5: Data(#"{ monitor_auth: 1 }"#.utf8), source: "x") }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("monitor-auth-" + UUID().uuidString)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("heraldd.json5")
        try noAdmin.write(to: file, atomically: true, encoding: .utf8)
        let result = try runDaemon(["--config", file.path, "--port", "0"])
        #expect(result.status != 0)
        #expect(result.output.contains("monitor_auth"), "\(result.output)")
    }

    @Test func sighupTurnsTheLockOnAndOffAndRefusesAFileWithoutAnAdmin() throws {
        let daemon = try DaemonProcess(config: Self.users())
        let port = try daemon.monitorPort()
        let file = daemon.directory.appendingPathComponent("heraldd.json5")
        func reload(_ body: String, until log: String) throws {
            try ("{" + body + "}").write(to: file, atomically: true, encoding: .utf8)
            let seen = daemon.log.filter { $0.contains(log) }.count
            daemon.signal(SIGHUP)
            let deadline = Date().addingTimeInterval(10)
            while daemon.log.filter({ $0.contains(log) }).count == seen && Date() < deadline { usleep(20_000) }
        }
        #expect(try get("/varz", port, nil).status == 401)
        try reload(Self.users().replacingOccurrences(of: "monitor_auth: true", with: "monitor_auth: false"), until: "reloaded")
        #expect(try get("/varz", port, nil).status == 200, "live: the lock is off")
        try reload(#"monitor_port: 0, monitor_auth: true, auth: { users: [ { name: "app", token: "app-token" } ] }"#,
                   until: "reload failed")
        #expect(daemon.log.contains { $0.contains("reload failed") && $0.contains("monitor_auth") })
        #expect(try get("/varz", port, nil).status == 200, "the running configuration stays")
        try reload(Self.users(), until: "reloaded")
        #expect(try get("/varz", port, nil).status == 401, "and on again")
    }

    @Test func basicCredentialsParseAsRFC7617SaysAndNothingElse() {
        let encoded = Data("ops:to:ken".utf8).base64EncodedString()
        #expect(BasicCredentials(authorization: "Basic " + encoded) == BasicCredentials(authorization: "bAsIc  " + encoded))
        let parsed = BasicCredentials(authorization: "Basic " + encoded)
        #expect(parsed?.user == "ops" && parsed?.token == Array("to:ken".utf8), "the token keeps its colons")
        #expect(BasicCredentials(authorization: "Basic " + Data(":t".utf8).base64EncodedString())?.user == "")
        #expect(BasicCredentials(authorization: nil) == nil)
        #expect(BasicCredentials(authorization: "Bearer " + encoded) == nil)
        #expect(BasicCredentials(authorization: "Basic") == nil)
        #expect(BasicCredentials(authorization: "Basic %%%") == nil)
        #expect(BasicCredentials(authorization: "Basic " + Data("no-colon".utf8).base64EncodedString()) == nil)
    }

    @Test func monitorFailuresCountAgainstHelloAndHelloFailuresAgainstTheMonitor() throws {
        let daemon = try DaemonProcess(config: Self.users(failLimit: 3))
        let port = try daemon.monitorPort()
        #expect(try get("/varz", port, "ops", "guess-1").status == 401)
        #expect(try get("/varz", port, "ops", "guess-2").status == 401)
        // The third failure of the address and user `ops` is a wrong hello: now both are blocked.
        let guesser = try daemon.client()
        #expect(try guesser.request(#"{"op":"hello","user":"ops","token":"guess-3","rid":1}"#)["error"] as? String == "forbidden")
        let right = try daemon.client()
        #expect(try right.request(#"{"op":"hello","user":"ops","token":"ops-token","rid":2}"#)["error"] as? String
                == "too_many_attempts")
        #expect(try get("/varz", port, "ops", "ops-token").status == 429, "the right token, but the address is blocked")
        // Another user behind the same address is not blocked by guesses at ops.
        #expect(try get("/varz", port, "app", "app-token").status == 403)
    }

    @Test func helloFailuresBlockTheMonitorToo() throws {
        let daemon = try DaemonProcess(config: Self.users(failLimit: 2))
        let port = try daemon.monitorPort()
        for n in 1...2 {
            let guesser = try daemon.client()
            _ = try guesser.request(#"{"op":"hello","user":"ops","token":"guess-\#(n)","rid":1}"#)
        }
        #expect(try get("/varz", port, "ops", "ops-token").status == 429)
        #expect(try get("/healthz", port, nil).status == 200, "the probe needs no credentials")
    }

    @Test func aSlowTokenIsVerifiedOffTheLoopAndRemembered() throws {
        // ~1 s of PBKDF2 on this machine: long enough to see the loop serve meanwhile.
        let hash = try #require(Config.hashToken("slow-token", iterations: 2_000_000))
        let daemon = try DaemonProcess(config: Self.users(slowHash: hash), arguments: ["--workers", "1"])
        let port = try daemon.monitorPort()
        let client = try daemon.client()
        _ = try client.request(#"{"op":"hello","token":"ops-token","rid":0}"#)
        let scrape = try HTTPTestClient(port: port)
        scrape.send("GET /varz HTTP/1.1\r\nHost: x\r\nAuthorization: Basic " + Data("slow:slow-token".utf8).base64EncodedString()
                    + "\r\n\r\n")
        usleep(50_000)
        // The only loop answers pings while the KDF runs on the thread pool.
        for n in 1...5 { #expect(try client.request(#"{"op":"ping","rid":\#(n)}"#)["pong"] is Int) }
        #expect(scrape.hasNothingToRead(), "the verification is still running")
        #expect(try scrape.answer(timeout: 30).status == 200)
        // Remembered: the next scrape is answered without another KDF (well under its second).
        let started = Date()
        #expect(try get("/varz", port, "slow", "slow-token").status == 200)
        #expect(Date().timeIntervalSince(started) < 0.5)
        #expect(try get("/varz", port, "slow", "wrong").status == 401)
    }

    @Test func healthzAnswersUnderTenTimesTheCapOfHalfSentLockedRequests() throws {
        let hash = try #require(Config.hashToken("slow-token", iterations: 200_000))
        let daemon = try DaemonProcess(config: Self.users(slowHash: hash) + ", monitor_timeout_ms: 60000")
        let port = try daemon.monitorPort()
        let held = try (0..<640).map { _ in try HTTPTestClient(port: port) }
        for client in held { client.send("GET /varz HTTP/1.1\r\nAuthorization: Basic ") }
        for _ in 0..<5 {
            let started = Date()
            #expect(try get("/healthz", port, nil).status == 200)
            #expect(Date().timeIntervalSince(started) < 2)
        }
        #expect(try held[0].readToEnd(timeout: 10).isEmpty, "the oldest was closed to make room")
    }
}
