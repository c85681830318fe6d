#if canImport(Network)
import Foundation
import Network
import Security

/// `TLSOptions` in Network.framework's terms: the server name, and how the certificate is
/// checked (`sec_protocol_options_set_verify_block` for a CA file or `.insecure`).
extension NetworkTransport {
    /// Builds the TLS options of one connection.
    /// - Throws: `.connectionFailed` when the CA file cannot be read or holds no certificate.
    static func tlsOptions(_ options: TLSOptions, endpoint: Endpoint) throws(HeraldClientError) -> NWProtocolTLS.Options {
        let tls = NWProtocolTLS.Options()
        let security = tls.securityProtocolOptions
        var serverName = options.serverName
        if serverName == nil, case .tcp(let host, _) = endpoint { serverName = host }
        if let serverName { sec_protocol_options_set_tls_server_name(security, serverName) }
        switch options.trust {
        case .system:
            break
        case .insecure:
            sec_protocol_options_set_verify_block(security, { _, _, complete in complete(true) }, verifyQueue)
        case .certificateAuthorities(let file):
            let anchors = try AnchorCertificates(file: file)
            sec_protocol_options_set_verify_block(security, { _, trust, complete in
                complete(anchors.evaluate(sec_trust_copy_ref(trust).takeRetainedValue()))
            }, verifyQueue)
        }
        return tls
    }

    private static let verifyQueue = DispatchQueue(label: "herald.tls.verify")
}

/// The certificates of a CA file, trusted instead of the system's anchors.
final class AnchorCertificates: @unchecked Sendable {
    // @unchecked: immutable after init; `SecCertificate` is a thread-safe CF type.
    private let certificates: [SecCertificate]

    /// Reads the PEM file.
    /// - Throws: `.connectionFailed` when it cannot be read or holds no certificate.
    init(file: String) throws(HeraldClientError) {
        guard let text = try? String(contentsOfFile: file, encoding: .utf8) else {
            throw .connectionFailed("cannot read the CA file \(file)")
        }
        certificates = PEMCertificates.derBlocks(in: text).compactMap { der in
            SecCertificateCreateWithData(nil, Data(der) as CFData)
        }
        guard !certificates.isEmpty else { throw .connectionFailed("no certificate in the CA file \(file)") }
    }

    /// Evaluates the server's chain against these anchors only (the TLS stack's policy,
    /// which checks the server name, stays in place).
    /// - Returns: whether the chain is trusted.
    func evaluate(_ trust: SecTrust) -> Bool {
        guard SecTrustSetAnchorCertificates(trust, certificates as CFArray) == errSecSuccess,
              SecTrustSetAnchorCertificatesOnly(trust, true) == errSecSuccess else { return false }
        var error: CFError?
        return SecTrustEvaluateWithError(trust, &error)
    }
}
#endif
