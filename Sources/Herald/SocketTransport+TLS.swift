#if !canImport(Network)
import Glibc

extension SocketTransport {
    /// Runs the TLS handshake on the connected socket; on failure the socket is closed.
    /// - Throws: `HeraldClientError.connectionFailed` naming the endpoint and OpenSSL's reason.
    func startTLS(_ options: TLSOptions, endpoint: Endpoint, timeout: Double, wake: Int32) throws(HeraldClientError) {
        var host: String?
        if case .tcp(let name, _) = endpoint { host = name }
        do {
            tls = try TLSStream.handshake(fd: fd, options: options, host: host, timeout: timeout, wake: wake)
        } catch {
            Glibc.close(fd)
            throw .connectionFailed("\(endpoint): \(error.reason)")
        }
    }

    /// Whether plaintext is waiting inside the TLS layer, where `poll` cannot see it.
    var hasBufferedInput: Bool { tls?.hasBufferedInput ?? false }

    /// Whether sealed TLS records still wait for the kernel.
    var hasPendingOutput: Bool { tls?.hasPendingOutput ?? false }

    /// Sends TLS records sealed earlier; nothing to do on a plain socket.
    func flushPending() throws(HeraldClientError) {
        try tls?.sendPending(fd: fd)
    }
}
#endif
