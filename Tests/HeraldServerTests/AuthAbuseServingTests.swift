import Foundation
import Testing
import HeraldBroker
@testable import HeraldServer
import HeraldTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Issue 12 against the real `heraldd`: pbkdf2 tokens verified off the loop with the lines
/// behind a `hello` held in order, failed `hello`s logged, counted and blocked per address,
/// the pre-auth cap and the per-user connection limit.
@Suite struct AuthAbuseServingTests {
    /// A `pbkdf2-sha256` line for `token`, as `--hash-token` prints it.
    private static func slowHash(_ token: String, iterations: Int = 1_000) -> String {
        Config.hashToken(token, iterations: iterations) ?? ""
    }

    /// Waits up to 10 s for a log line that satisfies `matches` (stderr is read asynchronously).
    private static func waitForLog(_ daemon: DaemonProcess, _ matches: (String) -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            if daemon.log.contains(where: matches) { return true }
            usleep(20_000)
        }
        return false
    }

    @Test func slowTokenHelloWithALongLineBehindItInOneWriteIsAnsweredInOrder() throws {
        let daemon = try DaemonProcess(config: #"auth: { users: [ { name: "app", token_hash: "\#(Self.slowHash("app-secret"))" } ] }"#)
        let client = try daemon.client()
        let payload = String(repeating: "y", count: 6_000)
        client.send(#"{"op":"hello","token":"app-secret","rid":1}"# + "\n" + #"{"op":"pub","ch":"app.x","data":""#
                    + payload + #"","rid":2}"# + "\n" + #"{"op":"ping","rid":3}"#)
        let hello = try client.frame()
        #expect(hello["ok"] as? String == "hello" && hello["rid"] as? Int == 1)
        #expect(try client.frame()["ok"] as? String == "pub", "held behind the hello, then framed with max_line")
        #expect(try client.frame()["rid"] as? Int == 3)
        let wrong = try daemon.client()
        wrong.send(#"{"op":"hello","token":"guess"}"# + "\n" + #"{"op":"ping","rid":9}"#)
        #expect(try wrong.frame()["error"] as? String == "forbidden")
        #expect(wrong.isClosedByPeer(), "nothing behind a wrong token is served")
    }

    @Test func overTLSTheLinesBehindASlowHelloAreHeldToo() throws {
        let certificate = try TestCertificate()
        defer { certificate.remove() }
        let users = #"auth: { users: [ { name: "app", token_hash: "\#(Self.slowHash("app-secret"))" } ] }"#
        let daemon = try DaemonProcess(config: certificate.daemonConfig + users)
        let client = try OpenSSLClient(port: try daemon.tlsPort(), caFile: certificate.certificatePath)
        _ = try client.frame()
        client.send(#"{"op":"hello","token":"app-secret"}"# + "\n" + #"{"op":"sub","ch":"a","rid":1}"#)
        #expect(try client.frame()["ok"] as? String == "hello")
        #expect(try client.frame()["ok"] as? String == "sub")
    }

    @Test func manyConnectionsHelloingWithOneTokenAtOnceAllGetIn() throws {
        let daemon = try DaemonProcess(config: #"auth: { users: [ { name: "app", token_hash: "\#(Self.slowHash("storm", iterations: 200_000))" } ] }"#)
        let clients = try (0..<12).map { _ in try daemon.client() }
        for (rid, client) in clients.enumerated() {
            client.send(#"{"op":"hello","token":"storm","rid":\#(rid)}"# + "\n" + #"{"op":"ping","rid":"p"}"#)
        }
        for (rid, client) in clients.enumerated() {
            let hello = try client.frame(timeout: 30)
            #expect(hello["ok"] as? String == "hello" && hello["rid"] as? Int == rid)
            #expect(try client.frame()["rid"] as? String == "p", "the held line follows")
        }
    }

    @Test func aSlowVerificationDoesNotStallOtherClients() throws {
        // ~1 s of KDF per wrong hello on the development machine.
        let hash = Self.slowHash("right", iterations: 1_000_000)
        let daemon = try DaemonProcess(config: #"auth: { users: [ { name: "app", token: "plain" }, { name: "s", token_hash: "\#(hash)" } ] }"#)
        let other = try daemon.client()
        #expect(try other.request(#"{"op":"hello","token":"plain"}"#)["ok"] as? String == "hello")
        let guesser = try daemon.client()
        let sent = Date()
        guesser.send(#"{"op":"hello","token":"wrong"}"#)
        var slowest = 0.0
        for rid in 0..<5 {
            let start = Date()
            #expect(try other.request(#"{"op":"ping","rid":\#(rid)}"#)["rid"] as? Int == rid)
            slowest = max(slowest, Date().timeIntervalSince(start))
        }
        let verdict = try guesser.frame(timeout: 30)
        #expect(verdict["error"] as? String == "forbidden")
        let kdf = Date().timeIntervalSince(sent)
        #expect(slowest < kdf / 2, "pings took at most \(slowest) s while the KDF took \(kdf) s")
    }

    @Test func failedHellosAreLoggedWithThePeerCountedAndThenBlocked() throws {
        let daemon = try DaemonProcess(config: #"auth: { users: [ { name: "app", token: "right" } ] }, auth_fail_limit: 2, auth_block_ms: 60000"#)
        let watcher = try daemon.client()
        #expect(try watcher.request(#"{"op":"hello","token":"right"}"#)["ok"] as? String == "hello")
        for _ in 0..<2 {
            let guesser = try daemon.client()
            #expect(try guesser.request(#"{"op":"hello","token":"guess"}"#)["error"] as? String == "forbidden")
        }
        let blocked = try daemon.client()
        let refused = try blocked.request(#"{"op":"hello","token":"right","rid":5}"#)
        #expect(refused["error"] as? String == "too_many_attempts" && refused["rid"] as? Int == 5)
        #expect(blocked.isClosedByPeer())
        let stats = try watcher.request(#"{"op":"stats"}"#)
        #expect(stats["auth_failures"] as? Int == 2 && stats["auth_blocked"] as? Int == 1)
        #expect(Self.waitForLog(daemon) { $0.contains("address blocked after failed hellos") && $0.contains("peer=127.0.0.1") })
        #expect(daemon.log.filter { $0.contains("hello refused: token not accepted") && $0.contains("peer=127.0.0.1") }.count == 2)
    }

    @Test func silentConnectionsFillingMaxUnauthenticatedDoNotLockOutAClient() throws {
        let daemon = try DaemonProcess(config: #"auth: { users: [ { name: "app", token: "t" } ] }, max_unauthenticated: 3"#)
        let silent = try (0..<3).map { _ in try daemon.client() }
        let client = try daemon.client()
        let evicted = try silent[0].frame()
        #expect(evicted["error"] as? String == "limit")
        #expect(silent[0].isClosedByPeer())
        #expect(try client.request(#"{"op":"hello","token":"t"}"#)["ok"] as? String == "hello")
        #expect(try client.request(#"{"op":"sub","ch":"x","rid":1}"#)["ok"] as? String == "sub")
        #expect(try client.request(#"{"op":"pub","ch":"y","rid":2}"#)["ok"] as? String == "pub")
        #expect(try client.request(#"{"op":"stats"}"#)["unauthenticated"] as? Int == 2)
    }

    @Test func aUsersConnectionsLimitFromTheConfigRefusesTheHelloPastIt() throws {
        let daemon = try DaemonProcess(config: #"user_limits: { connections: 5 }, auth: { users: [ { name: "app", token: "t", limits: { connections: 1 } } ] }"#)
        let first = try daemon.client()
        #expect(try first.request(#"{"op":"hello","token":"t"}"#)["ok"] as? String == "hello")
        let second = try daemon.client()
        #expect(try second.request(#"{"op":"hello","token":"t"}"#)["error"] as? String == "limit")
        #expect(second.isClosedByPeer())
        #expect(Self.waitForLog(daemon) { $0.contains("user at its connections limit") && $0.contains("user=app") })
    }

    @Test func oldSha256HashesStillWorkAndAreWarnedAboutAtStartAndReload() throws {
        let hash = TokenCredential.hashLine(token: Array("old".utf8), salt: [1, 2, 3])
        let daemon = try DaemonProcess(config: #"auth: { users: [ { name: "legacy", token_hash: "\#(hash)" } ] }"#)
        let client = try daemon.client()
        #expect(try client.request(#"{"op":"hello","token":"old"}"#)["ok"] as? String == "hello")
        let warning = { (line: String) in line.contains("fast sha256 scheme") && line.contains("user=legacy") }
        #expect(daemon.log.filter(warning).count == 1)
        daemon.signal(SIGHUP)
        #expect(Self.waitForLog(daemon) { _ in daemon.log.filter(warning).count == 2 }, "again on reload")
    }

    @Test func theDefaultHashTokenLineAuthenticates() throws {
        let result = try runDaemon(["--hash-token", "fresh"])
        let line = result.output.trimmingCharacters(in: .whitespacesAndNewlines)
        let daemon = try DaemonProcess(config: #"auth: { users: [ { name: "app", token_hash: "\#(line)" } ] }"#)
        let client = try daemon.client()
        #expect(try client.request(#"{"op":"hello","token":"fresh"}"#)["ok"] as? String == "hello")
        let again = try daemon.client()
        #expect(try again.request(#"{"op":"hello","token":"fresh"}"#)["ok"] as? String == "hello", "the second one is cached")
        #expect(!daemon.log.contains { $0.contains("fast sha256") })
    }
}
