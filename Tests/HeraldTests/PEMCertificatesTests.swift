import Foundation
@testable import Herald
import HeraldTestSupport
import Testing

/// The PEM reader the Apple transport gives Network.framework its anchors with; shared code, so
/// it is tested here against the test certificate the TLS tests use.
@Suite struct PEMCertificatesTests {
    @Test func everyCertificateBlockBecomesItsDERBytes() throws {
        let certificate = try TestCertificate()
        defer { certificate.remove() }
        let pem = try String(contentsOfFile: certificate.certificatePath, encoding: .utf8)
        let blocks = PEMCertificates.derBlocks(in: "junk before\n" + pem + "\n" + pem)
        #expect(blocks.count == 2)
        // DER of a certificate is a SEQUENCE (0x30) with a long-form length.
        #expect(blocks.first?.first == 0x30)
        #expect(blocks.first == blocks.last)
    }

    @Test func textWithoutCertificatesGivesNone() {
        #expect(PEMCertificates.derBlocks(in: "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n").isEmpty)
        #expect(PEMCertificates.derBlocks(in: "-----BEGIN CERTIFICATE-----\n!!!!\n-----END CERTIFICATE-----").isEmpty)
    }
}
