import CLibUV
#if canImport(Glibc)
import Glibc
#endif

/// A listening socket (TCP or Unix) that hands accepted connections to the server.
///
/// Handle rules (docs/architecture.md): the handle's `data` holds a retained reference to
/// this object from init until the close callback, which releases it and frees the memory.
final class Listener {
    /// Where it listens.
    enum Endpoint {
        case tcp(host: String, port: Int)
        /// A Unix socket at `path` whose permission bits are set to `mode` after bind.
        case unix(path: String, mode: Int)
    }

    unowned let server: Server
    let endpoint: Endpoint
    /// Whether accepted connections speak TLS (the `tls_port` listener).
    let transport: Transport
    private let handle: UnsafeMutableRawPointer
    private var isClosing = false
    /// The socket file this listener bound (Unix only), removed on close if still there.
    private var boundSocket: UnixSocketPath.Identity?
    /// Whether binding removed a stale socket (one nobody answered on) left at the path.
    private(set) var removedStaleSocket = false

    /// Binds and starts listening.
    /// - Parameter transport: whether connections from it are wrapped in TLS, WebSocket frames or both.
    /// - Throws: UVError naming the endpoint when init, bind or listen fails.
    init(server: Server, endpoint: Endpoint, transport: Transport = .plain) throws(UVError) {
        self.server = server
        self.endpoint = endpoint
        self.transport = transport
        self.handle = Connection.allocateStreamHandle()
        do throws(UVError) {
            try Self.initHandle(handle, endpoint: endpoint, loop: server.main.loop)
        } catch {
            handle.deallocate()
            throw error
        }
        handle.assumingMemoryBound(to: uv_handle_t.self).pointee.data = Unmanaged.passRetained(self).toOpaque()
        do throws(UVError) {
            try bindAndListen()
        } catch {
            close()
            throw error
        }
    }

    /// The TCP port actually bound (useful with port 0), or nil for Unix sockets.
    var boundPort: Int? {
        guard case .tcp = endpoint else { return nil }
        var storage = sockaddr_storage()
        var length = Int32(MemoryLayout<sockaddr_storage>.size)
        let status = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                uv_tcp_getsockname(handle.assumingMemoryBound(to: uv_tcp_t.self), $0, &length)
            }
        }
        guard status == 0 else { return nil }
        return withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin_port)) }
        }
    }

    /// Stops listening; memory goes in the close callback.
    func close() {
        guard !isClosing else { return }
        isClosing = true
        if case .unix(let path, _) = endpoint, let boundSocket { UnixSocketPath.removeIfOwn(path, identity: boundSocket) }
        uv_close(handle.assumingMemoryBound(to: uv_handle_t.self)) { handle in
            guard let handle, let data = handle.pointee.data else { return }
            Unmanaged<Listener>.fromOpaque(data).release()
            UnsafeMutableRawPointer(handle).deallocate()
        }
    }

    private static func initHandle(_ handle: UnsafeMutableRawPointer, endpoint: Endpoint,
                                   loop: UnsafeMutablePointer<uv_loop_t>) throws(UVError) {
        switch endpoint {
        case .tcp:
            try UVError.check(uv_tcp_init(loop, handle.assumingMemoryBound(to: uv_tcp_t.self)), "tcp init")
        case .unix:
            try UVError.check(uv_pipe_init(loop, handle.assumingMemoryBound(to: uv_pipe_t.self), 0), "pipe init")
        }
    }

    private func bindAndListen() throws(UVError) {
        switch endpoint {
        case .tcp(let host, let port):
            try bindTCP(host: host, port: port)
        case .unix(let path, let mode):
            removedStaleSocket = try UnixSocketPath.prepare(path)
            let bound = try UnixSocketPath.bind(path, mode: mode)
            boundSocket = bound.identity
            let opened = uv_pipe_open(handle.assumingMemoryBound(to: uv_pipe_t.self), bound.descriptor)
            guard opened == 0 else {
                Glibc.close(bound.descriptor)
                throw UVError("open unix " + path, opened)
            }
        }
        let status = uv_listen(handle.assumingMemoryBound(to: uv_stream_t.self), 511) { stream, status in
            guard let stream, let data = stream.pointee.data else { return }
            Unmanaged<Listener>.fromOpaque(data).takeUnretainedValue().accept(status: status)
        }
        try UVError.check(status, "listen " + describe())
    }

    private func bindTCP(host: String, port: Int) throws(UVError) {
        let tcp = handle.assumingMemoryBound(to: uv_tcp_t.self)
        if host.contains(":") {
            var address = sockaddr_in6()
            try UVError.check(uv_ip6_addr(host, Int32(port), &address), "address " + host)
            let status = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { uv_tcp_bind(tcp, $0, 0) }
            }
            try UVError.check(status, "bind " + describe())
        } else {
            var address = sockaddr_in()
            try UVError.check(uv_ip4_addr(host, Int32(port), &address), "address " + host)
            let status = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { uv_tcp_bind(tcp, $0, 0) }
            }
            try UVError.check(status, "bind " + describe())
        }
    }

    private func accept(status: Int32) {
        guard status == 0 else {
            server.logger.warn("accept failed", ["error": UVError("accept", status).description])
            return
        }
        server.accept(from: handle.assumingMemoryBound(to: uv_stream_t.self), isTCP: isTCP, transport: transport)
    }

    /// Accepts a pending connection and returns a duplicate of its descriptor for another
    /// loop to adopt (a handle cannot move between loops; a descriptor can).
    /// - Returns: the descriptor, or nil when accepting failed.
    static func acceptDescriptor(from listener: UnsafeMutablePointer<uv_stream_t>,
                                 loop: UnsafeMutablePointer<uv_loop_t>, isTCP: Bool) -> Int32? {
        let temporary = Connection.allocateStreamHandle()
        let initialized = isTCP
            ? uv_tcp_init(loop, temporary.assumingMemoryBound(to: uv_tcp_t.self))
            : uv_pipe_init(loop, temporary.assumingMemoryBound(to: uv_pipe_t.self), 0)
        guard initialized == 0 else {
            temporary.deallocate()
            return nil
        }
        var descriptor: Int32?
        if uv_accept(listener, temporary.assumingMemoryBound(to: uv_stream_t.self)) == 0 {
            var fd = uv_os_fd_t()
            if uv_fileno(temporary.assumingMemoryBound(to: uv_handle_t.self), &fd) == 0 {
                let copy = dup(fd)
                if copy >= 0 { descriptor = copy }
            }
        }
        uv_close(temporary.assumingMemoryBound(to: uv_handle_t.self)) { handle in
            UnsafeMutableRawPointer(handle)?.deallocate()
        }
        return descriptor
    }

    private var isTCP: Bool {
        if case .tcp = endpoint { return true }
        return false
    }

    /// `127.0.0.1:7400` or `unix:/path`.
    func describe() -> String {
        switch endpoint {
        case .tcp(let host, let port): return host + ":" + String(port)
        case .unix(let path, _): return "unix:" + path
        }
    }
}
