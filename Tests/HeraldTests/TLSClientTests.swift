import Foundation
import Herald
import HeraldTestSupport
import Testing

/// The Swift client over the daemon's TLS port.
@Suite struct TLSClientTests {
    private func tlsClient(port: Int, host: String = "127.0.0.1", tls: TLSOptions) -> HeraldClient {
        HeraldClient(configuration: ClientConfiguration(endpoint: .tcp(host: host, port: port), name: "tls",
                                                        reconnect: .never, tls: tls))
    }

    /// The error `connect()` throws, or nil when it connected.
    private func connectError(_ client: HeraldClient) async -> HeraldClientError? {
        do {
            try await client.connect()
            return nil
        } catch {
            return error
        }
    }

    @Test func publishAndSubscribeOverVerifiedTLS() async throws {
        let certificate = try TestCertificate()
        defer { certificate.remove() }
        let daemon = try TestDaemon(config: certificate.daemonConfig)
        let port = try #require(daemon.tlsPort)
        let client = tlsClient(port: port, tls: .certificateAuthorities(file: certificate.certificatePath))
        defer { client.close() }
        try await client.connect()
        #expect(client.serverInfo?.server == "heraldd")
        let got = LockedValue<[ChatLine]>([])
        let sub = try client.subscribe(ChatLine.self) { line, _ in got.withLock { $0.append(line) } }
        try await sub.ready()
        // Large enough for many TLS records and more plaintext than one read returns.
        let long = String(repeating: "y", count: 200_000)
        for n in 1...5 { try await client.publish(ChatLine(text: n == 3 ? long : "hi", n: n)) }
        #expect(await eventually { got.value.count == 5 })
        #expect(got.value.map(\.n) == [1, 2, 3, 4, 5])
        #expect(got.value.first { $0.n == 3 }?.text.count == 200_000)
        // A plain-TCP client on the same daemon sees the same channel.
        let plain = try await connectedClient(daemon)
        defer { plain.close() }
        try await plain.publish(ChatLine(text: "from plain", n: 6))
        #expect(await eventually { got.value.count == 6 })
    }

    @Test func hostNameIsCheckedAgainstTheCertificate() async throws {
        let certificate = try TestCertificate()
        defer { certificate.remove() }
        let daemon = try TestDaemon(config: certificate.daemonConfig)
        let port = try #require(daemon.tlsPort)
        let byName = tlsClient(port: port, host: "localhost", tls: .certificateAuthorities(file: certificate.certificatePath))
        defer { byName.close() }
        try await byName.connect()
        #expect(try await byName.ping() > 0)
        let wrongName = tlsClient(port: port, tls: TLSOptions(trust: .certificateAuthorities(file: certificate.certificatePath),
                                                              serverName: "elsewhere.example"))
        defer { wrongName.close() }
        let error = await connectError(wrongName)
        guard case .connectionFailed(let reason)? = error else {
            Issue.record("expected connectionFailed, got \(String(describing: error))")
            return
        }
        #expect(reason.contains("certificate verify failed"), "\(reason)")
    }

    @Test func wrongCAIsAClearConnectErrorAndInsecureModeConnects() async throws {
        let certificate = try TestCertificate()
        let other = try TestCertificate()
        defer {
            certificate.remove()
            other.remove()
        }
        let daemon = try TestDaemon(config: certificate.daemonConfig)
        let port = try #require(daemon.tlsPort)
        let wary = tlsClient(port: port, tls: .certificateAuthorities(file: other.certificatePath))
        defer { wary.close() }
        let error = await connectError(wary)
        guard case .connectionFailed(let reason)? = error else {
            Issue.record("expected connectionFailed, got \(String(describing: error))")
            return
        }
        #expect(reason.contains("certificate verify failed"), "\(reason)")
        #expect(reason.contains("127.0.0.1:\(port)"), "\(reason)")
        let trusting = tlsClient(port: port, tls: .insecure)
        defer { trusting.close() }
        try await trusting.connect()
        #expect(try await trusting.ping() > 0)
    }

    @Test func tlsToThePlainPortFailsCleanly() async throws {
        let certificate = try TestCertificate()
        defer { certificate.remove() }
        let daemon = try TestDaemon(config: certificate.daemonConfig)
        let confused = tlsClient(port: daemon.port, tls: .insecure)
        defer { confused.close() }
        let error = await connectError(confused)
        guard case .connectionFailed(let reason)? = error else {
            Issue.record("expected connectionFailed, got \(String(describing: error))")
            return
        }
        #expect(reason.contains("TLS handshake failed"), "\(reason)")
        let missingCA = tlsClient(port: daemon.tlsPort ?? 0, tls: .certificateAuthorities(file: "/nonexistent/ca.pem"))
        defer { missingCA.close() }
        let caError = await connectError(missingCA)
        #expect(caError?.description.contains("CA file /nonexistent/ca.pem: No such file or directory") == true,
                "\(String(describing: caError))")
    }
}
