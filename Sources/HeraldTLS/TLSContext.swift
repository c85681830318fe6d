import COpenSSL
#if canImport(Glibc)
import Glibc
#endif

/// An OpenSSL `SSL_CTX`: the certificate and key (server) or the trust settings (client)
/// shared by every TLS connection of one side. TLS 1.2 is the oldest version accepted.
///
/// Sendable because OpenSSL (1.1 and later) lets any thread create connections from one
/// context; the context is never changed after it is built.
public final class TLSContext: @unchecked Sendable {
    let context: OpaquePointer
    /// Whether connections made from it accept (server) or connect (client).
    let isServer: Bool
    /// Whether a client checks the server's certificate and name.
    let verifiesPeer: Bool

    private init(context: OpaquePointer, isServer: Bool, verifiesPeer: Bool) {
        self.context = context
        self.isServer = isServer
        self.verifiesPeer = verifiesPeer
    }

    deinit { SSL_CTX_free(context) }

    /// A server context with a PEM certificate chain and its private key.
    ///
    /// Both files are read now, so a missing file, a wrong format or a key that does not belong
    /// to the certificate stops start-up instead of failing each handshake later.
    /// - Parameters:
    ///   - certificateFile: PEM certificate (chain: leaf first), e.g. from `tls_cert`.
    ///   - keyFile: PEM private key of the leaf certificate, e.g. from `tls_key`.
    ///   - certificateLabel: the name to put before the certificate path in errors (a config key).
    ///   - keyLabel: the name to put before the key path in errors.
    ///   - tls12Ciphers: an OpenSSL cipher list for TLS 1.2 (e.g. from `tls_ciphers`), or nil
    ///     for OpenSSL's default; TLS 1.3 suites are not affected.
    ///   - ciphersLabel: the name to put before the cipher list in errors.
    /// - Returns: the context.
    /// - Throws: `TLSError` naming the label, the file (or cipher list) and OpenSSL's reason.
    public static func server(certificateFile: String, keyFile: String,
                              certificateLabel: String = "certificate", keyLabel: String = "key",
                              tls12Ciphers: String? = nil, ciphersLabel: String = "cipher list") throws(TLSError) -> TLSContext {
        ERR_clear_error()
        guard let context = SSL_CTX_new(TLS_server_method()) else { throw .fromQueue("SSL_CTX_new") }
        let built = TLSContext(context: context, isServer: true, verifiesPeer: false)
        try built.restrictVersions()
        if let tls12Ciphers { try built.restrictCiphers(tls12Ciphers, label: ciphersLabel) }
        let certificateContext = certificateLabel + " " + certificateFile
        try checkReadable(certificateFile, context: certificateContext)
        guard SSL_CTX_use_certificate_chain_file(context, certificateFile) == 1 else {
            throw .fromQueue(certificateContext)
        }
        let keyContext = keyLabel + " " + keyFile
        try checkReadable(keyFile, context: keyContext)
        guard SSL_CTX_use_PrivateKey_file(context, keyFile, SSL_FILETYPE_PEM) == 1 else {
            throw .fromQueue(keyContext)
        }
        guard SSL_CTX_check_private_key(context) == 1 else {
            throw .fromQueue(keyContext + " does not match " + certificateContext)
        }
        return built
    }

    /// A client context that trusts servers as `trust` says.
    /// - Parameter trust: a CA file, the system store, or no verification.
    /// - Returns: the context.
    /// - Throws: `TLSError` when the CA file cannot be read or holds no certificate.
    public static func client(trust: TLSTrust) throws(TLSError) -> TLSContext {
        ERR_clear_error()
        guard let context = SSL_CTX_new(TLS_client_method()) else { throw .fromQueue("SSL_CTX_new") }
        let verifies = trust != .insecure
        let built = TLSContext(context: context, isServer: false, verifiesPeer: verifies)
        try built.restrictVersions()
        switch trust {
        case .certificateAuthorities(let file):
            try checkReadable(file, context: "CA file " + file)
            guard SSL_CTX_load_verify_locations(context, file, nil) == 1 else {
                throw .fromQueue("CA file " + file)
            }
        case .system:
            guard SSL_CTX_set_default_verify_paths(context) == 1 else { throw .fromQueue("system CA store") }
        case .insecure:
            break
        }
        SSL_CTX_set_verify(context, verifies ? SSL_VERIFY_PEER : SSL_VERIFY_NONE, nil)
        return built
    }

    /// Checks a TLS 1.2 cipher list without building a server, so a bad list is reported
    /// even while no TLS listener uses it.
    /// - Parameters:
    ///   - list: an OpenSSL cipher-list string such as `ECDHE+AESGCM:ECDHE+CHACHA20`.
    ///   - label: the name to put before the list in errors (a config key).
    /// - Throws: `TLSError` such as `tls_ciphers "RC4": no cipher match`.
    public static func checkCipherList(_ list: String, label: String = "cipher list") throws(TLSError) {
        ERR_clear_error()
        guard let context = SSL_CTX_new(TLS_server_method()) else { throw .fromQueue("SSL_CTX_new") }
        let probe = TLSContext(context: context, isServer: true, verifiesPeer: false)
        try probe.restrictCiphers(list, label: label)
    }

    /// Sets the TLS 1.2 (and older) cipher list. OpenSSL skips names it does not know and
    /// fails only when nothing in the list matches; that failure is the one reported.
    private func restrictCiphers(_ list: String, label: String) throws(TLSError) {
        guard SSL_CTX_set_cipher_list(context, list) == 1 else {
            throw .fromQueue(label + " \"" + list + "\"")
        }
    }

    private func restrictVersions() throws(TLSError) {
        guard herald_ssl_ctx_set_min_tls12(context) == 1 else { throw .fromQueue("minimum TLS version") }
        _ = herald_ssl_ctx_set_modes(context)
        herald_ssl_ctx_no_renegotiation(context)
    }

    /// OpenSSL says only "system lib" for a missing file; the errno text is what an operator needs.
    private static func checkReadable(_ path: String, context: String) throws(TLSError) {
        guard let file = fopen(path, "r") else {
            throw TLSError(context + ": " + String(cString: strerror(errno)))
        }
        fclose(file)
    }
}
