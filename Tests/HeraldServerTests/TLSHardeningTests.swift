import Foundation
import HeraldServer
import HeraldTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Issue 12 on the TLS listener: a handshake deadline (`tls_timeout_ms`) and TLS 1.2 cipher
/// suites limited to ECDHE key exchange with AEAD ciphers (`tls_ciphers`).
@Suite struct TLSHardeningTests {
    /// A daemon with a TLS listener and its certificate.
    private func tlsDaemon(_ keyType: TestCertificate.KeyType = .ecP256, _ extra: String = "") throws
        -> (DaemonProcess, TestCertificate, Int) {
        let certificate = try TestCertificate(keyType: keyType)
        let daemon = try DaemonProcess(config: certificate.daemonConfig + extra)
        return (daemon, certificate, try daemon.tlsPort())
    }

    /// Seconds until the daemon closes `client`, or nil when it is still open after `limit`.
    private func secondsUntilClosed(_ client: TestClient, limit: Double) -> Double? {
        let start = Date()
        return client.isClosedByPeer(timeout: limit) ? Date().timeIntervalSince(start) : nil
    }

    @Test func silentConnectionToTheTLSPortIsClosedAtTheHandshakeTimeout() throws {
        let (daemon, certificate, port) = try tlsDaemon(.ecP256, "tls_timeout_ms: 500,")
        defer { certificate.remove() }
        let silent = try TestClient(port: port)
        // Others are served while it waits.
        let secure = try OpenSSLClient(port: port, caFile: certificate.certificatePath)
        #expect(try secure.frame()["info"] != nil)
        #expect(try daemon.client().request(#"{"op":"ping"}"#)["pong"] != nil)
        let waited = try #require(secondsUntilClosed(silent, limit: 5), "still open after 5 s")
        #expect(waited < 3)
        #expect(daemon.waitForLog("tls handshake timed out", "peer=127.0.0.1:"), "\(daemon.log.joined(separator: "\n"))")
        // The established TLS client outlives the deadline.
        secure.send(#"{"op":"ping","rid":2}"#)
        #expect(try secure.frame()["rid"] as? Int == 2)
    }

    @Test func halfAClientHelloIsClosedAtTheHandshakeTimeout() throws {
        let (daemon, certificate, port) = try tlsDaemon(.ecP256, "tls_timeout_ms: 500,")
        defer { certificate.remove() }
        let stalling = try TestClient(port: port)
        // A TLS 1.2 ClientHello record header announcing 512 bytes, then only a few of them.
        stalling.send(bytes: [0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xFC, 0x03, 0x03])
        let waited = try #require(secondsUntilClosed(stalling, limit: 5), "still open after 5 s")
        #expect(waited < 3)
        #expect(daemon.waitForLog("tls handshake timed out", "peer=127.0.0.1:"))
        #expect(try daemon.client().request(#"{"op":"ping"}"#)["pong"] != nil)
    }

    @Test func tlsTimeoutDefaultsToTwoSecondsAndReloadsLive() throws {
        let config = try Config.decode(json5: Data("{}".utf8), source: "f")
        #expect(config.tlsTimeoutMs == 2_000)
        let fresh = try Config.decode(json5: Data("{ tls_timeout_ms: 750 }".utf8), source: "f")
        #expect(config.reloadingLive(from: fresh).tlsTimeoutMs == 750)
        #expect(throws: ConfigError.self) { try Config.decode(json5: Data("{ tls_timeout_ms: 10 }".utf8), source: "f") }
    }

    @Test func tls12OffersOnlyECDHEWithAEADByDefault() throws {
        let (daemon, certificate, port) = try tlsDaemon(.rsa2048)
        defer { certificate.remove() }
        // AES128-SHA: static RSA and CBC; AES256-SHA256 and AES128-GCM-SHA256: static RSA key exchange.
        for suite in ["AES128-SHA", "AES256-SHA256", "AES128-GCM-SHA256"] {
            let client = try OpenSSLClient(port: port, caFile: certificate.certificatePath,
                                           options: ["-tls1_2", "-cipher", suite])
            let status = client.waitForExit(seconds: 10)
            #expect(status != nil && status != 0, "\(suite) was accepted: \(client.diagnostics)")
            #expect(client.diagnostics.contains("handshake failure") || client.diagnostics.contains("alert"),
                    "\(suite): \(client.diagnostics)")
        }
        #expect(daemon.waitForLog("tls handshake failed", "peer=127.0.0.1:"))
        // ECDHE key exchange with an AEAD cipher is what TLS 1.2 clients get.
        let client = try OpenSSLClient(port: port, caFile: certificate.certificatePath,
                                       options: ["-tls1_2", "-cipher", "ECDHE-RSA-AES128-GCM-SHA256"])
        #expect(try client.frame()["info"] != nil, "\(client.diagnostics)")
    }

    @Test func tlsCiphersReplacesTheTLS12List() throws {
        let (daemon, certificate, port) = try tlsDaemon(.ecP256, #"tls_ciphers: "ECDHE-ECDSA-AES256-GCM-SHA384","#)
        defer { certificate.remove() }
        let refused = try OpenSSLClient(port: port, caFile: certificate.certificatePath,
                                        options: ["-tls1_2", "-cipher", "ECDHE-ECDSA-AES128-GCM-SHA256"])
        let status = refused.waitForExit(seconds: 10)
        #expect(status != nil && status != 0, "\(refused.diagnostics)")
        let accepted = try OpenSSLClient(port: port, caFile: certificate.certificatePath,
                                         options: ["-tls1_2", "-cipher", "ECDHE-ECDSA-AES256-GCM-SHA384"])
        #expect(try accepted.frame()["info"] != nil, "\(accepted.diagnostics)")
        // TLS 1.3 keeps OpenSSL's own suites.
        let modern = try OpenSSLClient(port: port, caFile: certificate.certificatePath, options: ["-tls1_3"])
        #expect(try modern.frame()["info"] != nil, "\(modern.diagnostics)")
        _ = daemon
    }

    @Test func cipherListOpenSSLRejectsStopsStartupNamingTheKey() throws {
        let certificate = try TestCertificate()
        defer { certificate.remove() }
        let config = certificate.directory.appendingPathComponent("heraldd.json5")
        for enabled in [true, false] {
            let tls = enabled ? certificate.daemonConfig : ""
            try "{ \(tls) tls_ciphers: \"NO-SUCH-CIPHER\" }".write(to: config, atomically: true, encoding: .utf8)
            let result = try runDaemon(["--config", config.path, "--check-config"])
            #expect(result.status == Daemon.usageError, "\(result.output)")
            #expect(result.output.contains(#"tls_ciphers "NO-SUCH-CIPHER": no cipher match"#), "\(result.output)")
        }
    }
}
