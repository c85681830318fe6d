import Foundation
import HeraldTestSupport
import Testing

/// `herald` with `--tls`, `--tls-ca FILE` and `--tls-insecure` against the daemon's TLS port.
@Suite struct CLITLSTests {
    @Test func pubAndSubWorkOverTLSWithTheCACertificate() throws {
        let certificate = try TestCertificate()
        defer { certificate.remove() }
        let daemon = try TestDaemon(config: certificate.daemonConfig)
        let port = try #require(daemon.tlsPort)
        let tls = ["--port", String(port), "--tls-ca", certificate.certificatePath]
        let sub = try startHerald(["sub", "secure.*", "--count", "1", "--json"] + tls)
        #expect(try waitForSubscriptions(daemon, count: 1))
        let pub = try herald(["pub", "secure.news", "42", "--receipt"] + tls)
        #expect(pub.status == 0, "\(pub.stderr)")
        #expect(pub.stdout == "seq 1 receivers 1\n")
        let result = sub.finish()
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.hasPrefix(#"{"ch":"secure.news","seq":1"#))
    }

    @Test func wrongCAFailsWithAConnectionErrorAndInsecureConnects() throws {
        let certificate = try TestCertificate()
        let other = try TestCertificate()
        defer {
            certificate.remove()
            other.remove()
        }
        let daemon = try TestDaemon(config: certificate.daemonConfig)
        let port = String(try #require(daemon.tlsPort))
        let refused = try herald(["stats", "--port", port, "--tls-ca", other.certificatePath])
        #expect(refused.status == 3)
        #expect(refused.stderr.contains("certificate verify failed"), "\(refused.stderr)")
        let insecure = try herald(["stats", "--json", "--port", port, "--tls-insecure"])
        #expect(insecure.status == 0, "\(insecure.stderr)")
        #expect(insecure.stdout.contains("\"connections\""))
    }
}
