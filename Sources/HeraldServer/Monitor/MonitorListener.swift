import CLibUV
#if canImport(Glibc)
import Glibc
#endif

/// The HTTP monitoring listener (`monitor_port`), on the main loop.
///
/// Why the main loop and not a thread of its own: an answer costs one hold of the broker
/// lock (as long as a `stats` op) plus a few `/proc` reads, and every socket operation is
/// non-blocking, so a slow or hostile HTTP client costs a timer and a few hundred bytes,
/// never loop time. Each connection has a deadline (`monitor_timeout_ms`) and at most
/// `maxConnections` are open at once; past that a new one takes the place of the oldest
/// that has not sent a whole request (or was answered and lingers), so idle or half-sent
/// requests cannot keep a probe of `/healthz` out; only when every one is being answered
/// is the new one closed.
///
/// Handle rules (docs/architecture.md): the handle's `data` holds a retained reference to
/// this object from init until the close callback, which releases it and frees the memory.
final class MonitorListener {
    unowned let server: Server
    private let handle: UnsafeMutablePointer<uv_tcp_t>
    private var isClosing = false
    private var connections: [Int: MonitorConnection] = [:]
    private var nextID = 1

    /// Most HTTP connections open at once: scrapers and probes need a handful.
    static let maxConnections = 64
    /// The largest request head (request line plus headers) accepted; past it 414 or 431.
    static let maxHeadBytes = 8192

    /// Binds and starts listening on the main loop.
    /// - Parameters:
    ///   - server: the daemon; its broker is read for `/varz` and `/metrics`.
    ///   - host: the address to bind (IPv4 or IPv6 literal).
    ///   - port: the TCP port; 0 lets the OS pick one (see `boundPort`).
    /// - Throws: UVError naming the address when it cannot bind or listen.
    init(server: Server, host: String, port: Int) throws(UVError) {
        self.server = server
        handle = UnsafeMutablePointer<uv_tcp_t>.allocate(capacity: 1)
        let initialized = uv_tcp_init(server.main.loop, handle)
        guard initialized == 0 else {
            handle.deallocate()
            throw UVError("monitor tcp init", initialized)
        }
        handle.pointee.data = Unmanaged.passRetained(self).toOpaque()
        do throws(UVError) {
            try bind(host: host, port: port)
            let status = uv_listen(stream, 128) { stream, status in
                guard let stream, let data = stream.pointee.data else { return }
                Unmanaged<MonitorListener>.fromOpaque(data).takeUnretainedValue().accept(status: status)
            }
            try UVError.check(status, "listen monitor " + host + ":" + String(port))
        } catch {
            close()
            throw error
        }
    }

    private var stream: UnsafeMutablePointer<uv_stream_t> {
        UnsafeMutableRawPointer(handle).assumingMemoryBound(to: uv_stream_t.self)
    }

    /// The TCP port actually bound (useful with port 0).
    var boundPort: Int? {
        var storage = sockaddr_storage()
        var length = Int32(MemoryLayout<sockaddr_storage>.size)
        let status = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { uv_tcp_getsockname(handle, $0, &length) }
        }
        guard status == 0 else { return nil }
        // sin_port and sin6_port sit at the same offset.
        return withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin_port)) }
        }
    }

    /// HTTP connections open now (for tests and logs).
    var openConnections: Int { connections.count }

    /// Stops listening and closes every HTTP connection; memory goes in the close callbacks.
    func close() {
        guard !isClosing else { return }
        isClosing = true
        for connection in Array(connections.values) { connection.close() }
        connections.removeAll()
        uv_close(UnsafeMutableRawPointer(handle).assumingMemoryBound(to: uv_handle_t.self)) { handle in
            guard let handle, let data = handle.pointee.data else { return }
            Unmanaged<MonitorListener>.fromOpaque(data).release()
            UnsafeMutableRawPointer(handle).deallocate()
        }
    }

    /// A connection finished; forget it.
    func connectionClosed(_ id: Int) {
        connections[id] = nil
    }

    /// Answers one parsed request: at once, or (with `monitor_auth`) once its credentials are
    /// judged, which may take a KDF off the loop (`Server+MonitorAuth`).
    func serve(_ request: HTTPRequest, on connection: MonitorConnection) {
        guard server.config.monitorAuth, MonitorRoutes.needsCredentials(request.path) else {
            connection.answer(respond(to: request), to: request)
            return
        }
        server.checkMonitorCredentials(of: request, on: connection)
    }

    /// The answer to one parsed request, reading the daemon's figures when the path needs them.
    func respond(to request: HTTPRequest) -> HTTPResponse {
        let server = self.server
        return MonitorRoutes.respond(
            to: request,
            isStopping: { server.shared.withLock { _ in server.isStopping } },
            snapshot: { server.monitorSnapshot() },
            consoleInfo: { server.consoleInfo() })
    }

    private func accept(status: Int32) {
        guard status == 0, !isClosing else {
            if status != 0 { server.logger.warn("monitor accept failed", ["error": UVError("accept", status).description]) }
            return
        }
        let id = nextID
        nextID += 1
        let connection = MonitorConnection(listener: self, id: id, timeoutMs: server.config.monitorTimeoutMs,
                                           maxHeadBytes: Self.maxHeadBytes)
        guard connection.start(from: stream, loop: server.main.loop) else {
            server.logger.warn("monitor accept failed", ["http": "h" + String(id)])
            return
        }
        if connections.count >= Self.maxConnections && !evictOldest() {
            server.logger.warn("monitor connection refused: too many open", ["peer": connection.peer,
                                                                              "limit": Self.maxConnections])
            connection.close()
            return
        }
        connections[id] = connection
    }

    /// Closes the oldest connection that has not sent a whole request or lingers after its
    /// answer. - Returns: false when every open connection is being answered.
    private func evictOldest() -> Bool {
        guard let oldest = connections.values.filter(\.mayBeEvicted).min(by: { $0.id < $1.id }) else { return false }
        server.logger.info("monitor connection closed to make room", ["http": "h" + String(oldest.id),
                                                                       "peer": oldest.peer, "limit": Self.maxConnections])
        oldest.close()
        return true
    }

    private func bind(host: String, port: Int) throws(UVError) {
        if host.contains(":") {
            var address = sockaddr_in6()
            try UVError.check(uv_ip6_addr(host, Int32(port), &address), "monitor address " + host)
            let status = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { uv_tcp_bind(handle, $0, 0) }
            }
            try UVError.check(status, "bind monitor [" + host + "]:" + String(port))
        } else {
            var address = sockaddr_in()
            try UVError.check(uv_ip4_addr(host, Int32(port), &address), "monitor address " + host)
            let status = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { uv_tcp_bind(handle, $0, 0) }
            }
            try UVError.check(status, "bind monitor " + host + ":" + String(port))
        }
    }
}
