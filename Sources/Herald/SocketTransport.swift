#if !canImport(Network)
import Glibc

/// The Linux transport: a non-blocking stream socket owned by the client's I/O thread.
///
/// Why plain sockets and `poll`: the client must not need libuv, and one thread per client
/// polling one socket plus a wake pipe is simple and enough for an app's event traffic.
final class SocketTransport: Transport {
    /// The file descriptor; closed by `close()`.
    let fd: Int32
    /// The TLS layer when the configuration asks for TLS; `read`/`write` then carry plaintext.
    var tls: TLSStream?

    private init(fd: Int32) {
        self.fd = fd
    }

    /// Connects to `endpoint` within `timeout` seconds, giving up early if `wake` becomes readable.
    /// - Parameters:
    ///   - tls: when set, a TLS handshake follows the connect (within the same timeout).
    ///   - pathNews: unused: a POSIX socket has no path news of its own.
    /// - Returns: a connected non-blocking socket.
    /// - Throws: `HeraldClientError.connectionFailed` naming the cause.
    static func connect(to endpoint: Endpoint, tls: TLSOptions?, timeout: Double,
                        wake: WakePipe, pathNews: @escaping @Sendable (PathNews) -> Void) throws(HeraldClientError) -> SocketTransport {
        let socket: SocketTransport
        let wake = wake.readEnd
        switch endpoint {
        case .unix(let path):
            socket = try connectUnix(path: path, timeout: timeout, wake: wake)
        case .tcp(let host, let port):
            socket = try connectTCP(host: host, port: port, timeout: timeout, wake: wake)
        }
        if let tls {
            try socket.startTLS(tls, endpoint: endpoint, timeout: timeout, wake: wake)
        }
        return socket
    }

    private static func connectTCP(host: String, port: Int, timeout: Double, wake: Int32) throws(HeraldClientError) -> SocketTransport {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0, let first = list else {
            throw .connectionFailed("cannot resolve \(host): \(String(cString: gai_strerror(status)))")
        }
        defer { freeaddrinfo(first) }
        var lastError = "no address for \(host)"
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let info = entry {
            entry = info.pointee.ai_next
            guard let address = info.pointee.ai_addr else { continue }
            do {
                let socket = try attempt(family: info.pointee.ai_family, address: address,
                                         length: info.pointee.ai_addrlen, timeout: timeout, wake: wake)
                var one: Int32 = 1
                _ = setsockopt(socket.fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
                return socket
            } catch {
                lastError = error.reason
            }
        }
        throw .connectionFailed("\(host):\(port): \(lastError)")
    }

    private static func connectUnix(path: String, timeout: Double, wake: Int32) throws(HeraldClientError) -> SocketTransport {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard bytes.count < capacity else { throw .connectionFailed("socket path too long: \(path)") }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, byte) in bytes.enumerated() { raw[i] = byte }
        }
        do {
            return try withUnsafePointer(to: &address) { pointer throws(HeraldClientError) in
                try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa throws(HeraldClientError) in
                    try attempt(family: AF_UNIX, address: sa, length: socklen_t(MemoryLayout<sockaddr_un>.size),
                                timeout: timeout, wake: wake)
                }
            }
        } catch {
            throw .connectionFailed("\(path): \(error.reason)")
        }
    }

    /// One non-blocking connect with a poll for completion.
    private static func attempt(family: Int32, address: UnsafePointer<sockaddr>, length: socklen_t,
                                timeout: Double, wake: Int32) throws(HeraldClientError) -> SocketTransport {
        let fd = socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .connectionFailed(errorText(errno)) }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        if Glibc.connect(fd, address, length) != 0 {
            let code = errno
            guard code == EINPROGRESS || code == EAGAIN else {
                Glibc.close(fd)
                throw .connectionFailed(errorText(code))
            }
            var fds = [pollfd(fd: fd, events: Int16(POLLOUT), revents: 0), pollfd(fd: wake, events: Int16(POLLIN), revents: 0)]
            let ready = poll(&fds, 2, Int32(max(1, timeout * 1000)))
            if ready <= 0 || fds[0].revents == 0 {
                Glibc.close(fd)
                throw .connectionFailed(ready == 0 ? "connect timed out" : "connect interrupted")
            }
            var soError: Int32 = 0
            var size = socklen_t(MemoryLayout<Int32>.size)
            _ = getsockopt(fd, SOL_SOCKET, SO_ERROR, &soError, &size)
            if soError != 0 {
                Glibc.close(fd)
                throw .connectionFailed(errorText(soError))
            }
        }
        return SocketTransport(fd: fd)
    }

    /// Reads what is available into `buffer`.
    /// - Returns: bytes read, 0 at end of stream, -1 when nothing is available yet; throws on error.
    func read(into buffer: inout [UInt8]) throws(HeraldClientError) -> Int {
        if let tls { return try tls.read(fd: fd, into: &buffer) }
        let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
        if n >= 0 { return n }
        let code = errno
        if code == EAGAIN || code == EWOULDBLOCK || code == EINTR { return -1 }
        throw .connectionFailed(Self.errorText(code))
    }

    /// Writes as much of `bytes[offset...]` as the kernel takes.
    /// - Returns: bytes written (0 when the socket is full); throws on error.
    func write(_ bytes: [UInt8], from offset: Int) throws(HeraldClientError) -> Int {
        if let tls { return try tls.write(fd: fd, bytes, from: offset) }
        let n = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        if n >= 0 { return n }
        let code = errno
        if code == EAGAIN || code == EWOULDBLOCK || code == EINTR { return 0 }
        throw .connectionFailed(Self.errorText(code))
    }

    /// Closes the descriptor (after a best-effort close_notify on TLS).
    func close() {
        tls?.close(fd: fd)
        Glibc.close(fd)
    }

    /// Polls the socket and the wake pipe; drains the pipe when it fired.
    /// - Returns: true when the socket has input, end of stream or an error to read.
    func wait(milliseconds: Int, writable: Bool, wake: WakePipe) -> Bool {
        var fds = [
            pollfd(fd: fd, events: Int16(POLLIN) | (writable ? Int16(POLLOUT) : 0), revents: 0),
            pollfd(fd: wake.readEnd, events: Int16(POLLIN), revents: 0),
        ]
        guard poll(&fds, 2, Int32(clamping: milliseconds)) > 0 else { return false }
        if fds[1].revents != 0 { wake.drain() }
        return fds[0].revents & Int16(POLLIN | POLLHUP | POLLERR) != 0
    }

    /// `shutdown` of the descriptor, so the I/O thread sees end of stream and reconnects.
    var cutter: @Sendable () -> Void {
        let fd = self.fd
        return { _ = shutdown(fd, Int32(SHUT_RDWR)) }
    }

    static func errorText(_ code: Int32) -> String {
        String(cString: strerror(code))
    }
}

#endif
