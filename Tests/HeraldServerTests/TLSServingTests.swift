import Foundation
import HeraldServer
import HeraldTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The TLS listener, driven by `openssl s_client` and by raw sockets that misbehave.
@Suite struct TLSServingTests {
    /// A daemon with a TLS listener on an ephemeral port, and its certificate.
    private func tlsDaemon(_ extra: String = "") throws -> (DaemonProcess, TestCertificate, Int) {
        let certificate = try TestCertificate()
        let daemon = try DaemonProcess(config: certificate.daemonConfig + extra)
        return (daemon, certificate, try daemon.tlsPort())
    }

    @Test func opensslClientSpeaksTheProtocolOverTLS() throws {
        let (daemon, certificate, port) = try tlsDaemon()
        defer { certificate.remove() }
        let client = try OpenSSLClient(port: port, caFile: certificate.certificatePath)
        let info = try client.frame()["info"] as? [String: Any]
        #expect(info?["server"] as? String == "heraldd")
        client.send(#"{"op":"sub","ch":"secure.room"}"#)
        #expect(try client.frame()["ok"] as? String == "sub")
        client.send(#"{"op":"pub","ch":"secure.room","data":{"text":"hi"},"rid":1}"#)
        var frames = [try client.frame(), try client.frame()]
        frames.sort { ($0["event"] == nil ? 1 : 0) < ($1["event"] == nil ? 1 : 0) }
        #expect(frames[0]["event"] as? String == "secure.room")
        #expect((frames[0]["data"] as? [String: Any])?["text"] as? String == "hi")
        #expect(frames[1]["receivers"] as? Int == 1)
        #expect(client.diagnostics.contains("verify return:1"))
        _ = daemon
    }

    @Test func plainAndTLSClientsShareChannels() throws {
        let (daemon, certificate, port) = try tlsDaemon()
        defer { certificate.remove() }
        let plain = try daemon.client()
        #expect(try plain.request(#"{"op":"sub","ch":"mixed"}"#)["ok"] as? String == "sub")
        let secure = try OpenSSLClient(port: port, caFile: certificate.certificatePath)
        _ = try secure.frame()
        secure.send(#"{"op":"sub","ch":"back"}"#)
        #expect(try secure.frame()["ok"] as? String == "sub")
        secure.send(#"{"op":"pub","ch":"mixed","data":1}"#)
        #expect(try plain.frame()["data"] as? Int == 1)
        plain.send(#"{"op":"pub","ch":"back","data":2}"#)
        #expect(try secure.frame()["data"] as? Int == 2)
    }

    @Test func tlsConnectionsAdoptedByOtherLoopsWork() throws {
        // With two loops every second connection is accepted on the main loop and adopted by
        // the other as a descriptor: the TLS flag must travel with it.
        let (daemon, certificate, port) = try tlsDaemon("workers: 2,")
        defer { certificate.remove() }
        let clients = try (0..<3).map { _ in try OpenSSLClient(port: port, caFile: certificate.certificatePath) }
        for client in clients { #expect(try client.frame()["info"] != nil) }
        for client in clients {
            client.send(#"{"op":"sub","ch":"loops"}"#)
            #expect(try client.frame()["ok"] as? String == "sub")
        }
        try daemon.client().send(#"{"op":"pub","ch":"loops","data":3}"#)
        for client in clients { #expect(try client.frame()["data"] as? Int == 3) }
    }

    @Test func largeMessagesCrossManyRecordsBothWays() throws {
        let (daemon, certificate, port) = try tlsDaemon()
        defer { certificate.remove() }
        let secure = try OpenSSLClient(port: port, caFile: certificate.certificatePath)
        _ = try secure.frame()
        secure.send(#"{"op":"sub","ch":"big"}"#)
        #expect(try secure.frame()["ok"] as? String == "sub")
        // 300 KB: many 16 KB records, more than one 64 KB read buffer of plaintext per read.
        let payload = String(repeating: "x", count: 300_000)
        let plain = try daemon.client()
        plain.send(#"{"op":"pub","ch":"big","data":""# + payload + #""}"#)
        let event = try secure.frame(timeout: 20)
        #expect((event["data"] as? String)?.count == 300_000)
        secure.send(#"{"op":"pub","ch":"big","data":""# + payload + #"","rid":7}"#)
        var sawEcho = false
        var sawReceipt = false
        for _ in 0..<2 {
            let frame = try secure.frame(timeout: 20)
            if (frame["data"] as? String)?.count == 300_000 { sawEcho = true }
            if frame["rid"] as? Int == 7 { sawReceipt = true }
        }
        #expect(sawEcho && sawReceipt)
    }

    @Test func plainTextOnTheTLSPortIsClosedAndLogged() throws {
        let (daemon, certificate, port) = try tlsDaemon()
        defer { certificate.remove() }
        let stranger = try TestClient(port: port)
        stranger.send(#"{"op":"ping"}"#)
        #expect(stranger.isClosedByPeer(timeout: 10))
        #expect(daemon.waitForLog("tls handshake failed"))
        // Everyone else lives on: a TLS client and a plain one.
        let secure = try OpenSSLClient(port: port, caFile: certificate.certificatePath)
        #expect(try secure.frame()["info"] != nil)
        #expect(try daemon.client().request(#"{"op":"ping"}"#)["pong"] != nil)
    }

    @Test func clientClosingMidHandshakeIsLoggedAndHarmless() throws {
        let (daemon, certificate, port) = try tlsDaemon()
        defer { certificate.remove() }
        let quitter = try TestClient(port: port)
        // The start of a TLS 1.2 ClientHello record (handshake, version 3.1, 512 bytes to come),
        // then nothing: the daemon waits for the rest until the peer hangs up.
        quitter.send(bytes: [0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xFC, 0x03, 0x03])
        usleep(100_000)
        quitter.closeNow()
        #expect(daemon.waitForLog("tls handshake aborted"))
        let silent = try TestClient(port: port)
        silent.closeNow()
        let secure = try OpenSSLClient(port: port, caFile: certificate.certificatePath)
        #expect(try secure.frame()["info"] != nil)
        #expect(try daemon.client().request(#"{"op":"ping"}"#)["pong"] != nil)
    }

    @Test func clientThatDistrustsTheCertificateFailsAndTheDaemonLivesOn() throws {
        let (daemon, certificate, port) = try tlsDaemon()
        defer { certificate.remove() }
        let other = try TestCertificate()
        defer { other.remove() }
        let wary = try OpenSSLClient(port: port, caFile: other.certificatePath)
        #expect(wary.waitForExit(seconds: 10) != nil)
        #expect(wary.diagnostics.contains("verify error") || wary.diagnostics.contains("certificate verify failed"))
        #expect(daemon.waitForLog("tls handshake failed"))
        let secure = try OpenSSLClient(port: port, caFile: certificate.certificatePath)
        #expect(try secure.frame()["info"] != nil)
    }

    @Test func missingKeyFileRefusesStartupNamingKeyAndFile() throws {
        let certificate = try TestCertificate()
        defer { certificate.remove() }
        let missing = certificate.directory.appendingPathComponent("nope.pem").path
        let config = certificate.directory.appendingPathComponent("heraldd.json5")
        try "{ tls_port: 0, tls_cert: \"\(certificate.certificatePath)\", tls_key: \"\(missing)\" }"
            .write(to: config, atomically: true, encoding: .utf8)
        let result = try runDaemon(["--config", config.path, "--check-config"])
        #expect(result.status == Daemon.usageError)
        #expect(result.output.contains("tls_key " + missing + ": No such file or directory"), "\(result.output)")
    }

    @Test func keyOfAnotherCertificateRefusesStartup() throws {
        let certificate = try TestCertificate()
        let other = try TestCertificate()
        defer {
            certificate.remove()
            other.remove()
        }
        let config = certificate.directory.appendingPathComponent("heraldd.json5")
        try "{ tls_port: 0, tls_cert: \"\(certificate.certificatePath)\", tls_key: \"\(other.keyPath)\" }"
            .write(to: config, atomically: true, encoding: .utf8)
        let result = try runDaemon(["--config", config.path, "--port", "0"])
        #expect(result.status == Daemon.usageError)
        #expect(result.output.contains("tls_key " + other.keyPath), "\(result.output)")
        #expect(result.output.contains("key values mismatch"), "\(result.output)")
    }

    @Test func garbageCertificateFileRefusesStartupWithOpenSSLsReason() throws {
        let certificate = try TestCertificate()
        defer { certificate.remove() }
        let bogus = certificate.directory.appendingPathComponent("bogus.pem")
        try "not a certificate\n".write(to: bogus, atomically: true, encoding: .utf8)
        let config = certificate.directory.appendingPathComponent("heraldd.json5")
        try "{ tls_port: 0, tls_cert: \"\(bogus.path)\", tls_key: \"\(certificate.keyPath)\" }"
            .write(to: config, atomically: true, encoding: .utf8)
        let result = try runDaemon(["--config", config.path, "--check-config"])
        #expect(result.status == Daemon.usageError)
        #expect(result.output.contains("tls_cert " + bogus.path + ": "), "\(result.output)")
    }
}

/// The `tls_*` keys in the config file.
@Suite struct TLSConfigTests {
    private func decode(_ text: String) throws -> Config {
        try Config.decode(json5: Data(text.utf8), source: "config/heraldd.json5")
    }

    @Test func tlsIsOffByDefault() throws {
        let config = try decode("{}")
        #expect(config.tlsPort == nil)
        #expect(try config.makeTLSContext() == nil)
    }

    @Test func tlsKeysAreRead() throws {
        let config = try decode(#"{ tls_port: 7401, tls_host: "0.0.0.0", tls_cert: "c.pem", tls_key: "k.pem" }"#)
        #expect(config.tlsPort == 7401)
        #expect(config.tlsHost == "0.0.0.0")
        #expect(config.tlsCert == "c.pem")
        #expect(config.tlsKey == "k.pem")
    }

    @Test func tlsPortWithoutCertificateAndKeyIsRefused() {
        do throws(ConfigError) {
            _ = try Config.decode(json5: Data("{ tls_port: 7401 }".utf8), source: "config/heraldd.json5")
            Issue.record("a TLS port without certificate and key must be refused")
        } catch {
            #expect(error.description == #"config/heraldd.json5: "tls_port" is set but "tls_cert" and "tls_key" are not (both are needed for TLS)"#)
        }
    }

    @Test func tlsPortOutOfRangeIsRefused() {
        #expect(throws: ConfigError.self) { try decode(#"{ tls_port: 70000, tls_cert: "c", tls_key: "k" }"#) }
    }

    @Test func tlsKeysNeedARestart() throws {
        let running = try decode("{}")
        let fresh = try decode(#"{ tls_port: 7401, tls_cert: "c.pem", tls_key: "k.pem" }"#)
        #expect(running.keysNeedingRestart(for: fresh) == ["tls_port", "tls_cert", "tls_key"])
        #expect(running.reloadingLive(from: fresh).tlsPort == nil)
    }
}
