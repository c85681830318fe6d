import COpenSSL

/// One TLS connection driven through two memory BIOs, with no socket of its own.
///
/// Why memory BIOs: the daemon's sockets belong to libuv and the client's to its `poll` loop;
/// OpenSSL must not read or write them. The owner feeds the ciphertext it read (`feed`),
/// takes plaintext out (`read`), puts plaintext in (`write`) and sends whatever ciphertext
/// the engine produced (`takeCiphertext`): handshake messages, records, alerts, close_notify.
///
/// Not thread-safe: one engine is used by one thread (one loop) at a time.
public final class TLSEngine {
    /// Where a handshake stands.
    public enum Progress: Equatable {
        /// Finished; application data may flow.
        case complete
        /// Waiting for more bytes from the peer (send `takeCiphertext` first).
        case inProgress
        /// Failed for good; the connection must be closed (after sending any alert produced).
        case failed(TLSError)
    }

    /// What one `read` produced.
    public enum ReadResult: Equatable {
        /// This many plaintext bytes were written to the buffer.
        case bytes(Int)
        /// No plaintext until more ciphertext is fed.
        case needMore
        /// The peer sent close_notify: no more data will come.
        case closed
        /// The stream is broken (bad record, failed handshake); close the connection.
        case failed(TLSError)
    }

    private let ssl: OpaquePointer
    /// Ciphertext from the peer, read by OpenSSL.
    private let incoming: OpaquePointer
    /// Ciphertext for the peer, written by OpenSSL.
    private let outgoing: OpaquePointer
    private let isServer: Bool
    /// Set once the handshake finished.
    public private(set) var isHandshakeComplete = false
    private var shutdownQueued = false

    /// Creates the connection state for one peer.
    /// - Parameters:
    ///   - context: the server or client context.
    ///   - serverName: a client's idea of the server (host name or IP address): sent as SNI
    ///     when it is a name, and checked against the certificate when the context verifies.
    /// - Throws: `TLSError` when OpenSSL cannot allocate the connection.
    public init(context: TLSContext, serverName: String? = nil) throws(TLSError) {
        ERR_clear_error()
        guard let ssl = SSL_new(context.context) else { throw .fromQueue("SSL_new") }
        guard let incoming = BIO_new(BIO_s_mem()), let outgoing = BIO_new(BIO_s_mem()) else {
            SSL_free(ssl)
            throw .fromQueue("BIO_new")
        }
        herald_bio_set_retry_when_empty(incoming)
        herald_bio_set_retry_when_empty(outgoing)
        // The SSL object owns both BIOs from here on: SSL_free releases them.
        SSL_set_bio(ssl, incoming, outgoing)
        self.ssl = ssl
        self.incoming = incoming
        self.outgoing = outgoing
        self.isServer = context.isServer
        if context.isServer {
            SSL_set_accept_state(ssl)
        } else {
            SSL_set_connect_state(ssl)
            if let serverName { try expect(serverName, verify: context.verifiesPeer) }
        }
    }

    deinit { SSL_free(ssl) }

    private func expect(_ serverName: String, verify: Bool) throws(TLSError) {
        let isAddress = serverName.contains(":") || serverName.allSatisfy { $0 == "." || $0.isNumber }
        if !isAddress { _ = herald_ssl_set_sni(ssl, serverName) }
        guard verify else { return }
        let accepted = isAddress
            ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), serverName)
            : SSL_set1_host(ssl, serverName)
        guard accepted == 1 else { throw .fromQueue("server name " + serverName) }
    }

    /// Hands OpenSSL ciphertext that arrived from the peer (copied into the incoming BIO).
    /// - Parameter ciphertext: bytes exactly as read from the socket.
    public func feed(_ ciphertext: UnsafeRawBufferPointer) {
        guard let base = ciphertext.baseAddress, ciphertext.count > 0 else { return }
        var offset = 0
        while offset < ciphertext.count {
            let chunk = Int32(min(ciphertext.count - offset, Int(Int32.max)))
            let written = BIO_write(incoming, base + offset, chunk)
            if written <= 0 { return }
            offset += Int(written)
        }
    }

    /// Moves the handshake forward with what was fed so far.
    /// - Returns: whether it finished, needs more from the peer, or failed.
    public func handshake() -> Progress {
        if isHandshakeComplete { return .complete }
        ERR_clear_error()
        let status = SSL_do_handshake(ssl)
        if status == 1 {
            isHandshakeComplete = true
            return .complete
        }
        switch SSL_get_error(ssl, status) {
        case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
            return .inProgress
        default:
            return .failed(failure("handshake"))
        }
    }

    /// Decrypts plaintext into `buffer`, driving the handshake first if needed.
    /// - Parameter buffer: where plaintext goes; at most its size is produced.
    /// - Returns: the bytes produced, or why there are none.
    public func read(into buffer: UnsafeMutableRawBufferPointer) -> ReadResult {
        guard let base = buffer.baseAddress, buffer.count > 0 else { return .needMore }
        ERR_clear_error()
        var produced = 0
        let status = SSL_read_ex(ssl, base, buffer.count, &produced)
        if status == 1 {
            isHandshakeComplete = true
            return .bytes(produced)
        }
        switch SSL_get_error(ssl, 0) {
        case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
            return .needMore
        case SSL_ERROR_ZERO_RETURN:
            return .closed
        default:
            return .failed(failure(isHandshakeComplete ? "read" : "handshake"))
        }
    }

    /// Encrypts all of `plaintext` into records waiting in `takeCiphertext`.
    ///
    /// Call only after the handshake completed: before it OpenSSL would need the peer's bytes.
    /// - Parameter plaintext: the bytes to send.
    /// - Throws: `TLSError` when the connection can no longer send (after a fatal alert).
    public func write(_ plaintext: UnsafeRawBufferPointer) throws(TLSError) {
        guard let base = plaintext.baseAddress else { return }
        ERR_clear_error()
        var offset = 0
        while offset < plaintext.count {
            var written = 0
            guard SSL_write_ex(ssl, base + offset, plaintext.count - offset, &written) == 1 else {
                throw failure("write")
            }
            offset += written
        }
    }

    /// Queues close_notify (once), telling the peer no more data follows.
    public func shutdown() {
        guard !shutdownQueued, isHandshakeComplete else { return }
        shutdownQueued = true
        ERR_clear_error()
        _ = SSL_shutdown(ssl)
        ERR_clear_error()
    }

    /// Whether ciphertext waits to be sent.
    public var hasCiphertext: Bool { herald_bio_pending(outgoing) > 0 }

    /// Whether a `read` could produce plaintext without new bytes from the peer: decrypted
    /// bytes are left, or whole records wait in the incoming BIO. A partial record does not
    /// count (it needs the peer), so a poll loop does not spin on it.
    public var hasBufferedInput: Bool { SSL_pending(ssl) > 0 || herald_bio_pending(incoming) > 0 }

    /// Moves all waiting ciphertext to the end of `bytes`.
    /// - Parameter bytes: the send buffer to append to.
    public func takeCiphertext(appendingTo bytes: inout [UInt8]) {
        let pending = Int(herald_bio_pending(outgoing))
        guard pending > 0 else { return }
        let start = bytes.count
        bytes.append(contentsOf: repeatElement(0, count: pending))
        let read = bytes.withUnsafeMutableBytes { raw -> Int32 in
            BIO_read(outgoing, raw.baseAddress.map { $0 + start }, Int32(pending))
        }
        bytes.removeLast(pending - max(0, Int(read)))
    }

    /// The protocol version and cipher agreed, e.g. `TLSv1.3 TLS_AES_256_GCM_SHA384`, for logs.
    public var negotiated: String {
        let version = String(cString: SSL_get_version(ssl))
        let cipher = SSL_get_current_cipher(ssl).flatMap { SSL_CIPHER_get_name($0) }.map { String(cString: $0) } ?? "none"
        return version + " " + cipher
    }

    /// The reason for a failure, with the certificate check's verdict when that is what failed.
    private func failure(_ what: String) -> TLSError {
        var reasons = TLSError.drainReasons()
        let verdict = SSL_get_verify_result(ssl)
        if !isServer, verdict != X509_V_OK {
            reasons.append(String(cString: X509_verify_cert_error_string(verdict)))
        }
        if reasons.isEmpty { reasons.append(isHandshakeComplete ? "connection broken" : "peer did not complete the handshake") }
        return TLSError("TLS " + what + " failed: " + reasons.joined(separator: "; "))
    }
}
