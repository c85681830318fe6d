import CLibUV

/// One HTTP client of the monitor: read one request head, write one answer, close.
///
/// Phases: `reading` (the parser is fed until the head is complete or refused), `verifying`
/// (with `monitor_auth`, the Basic token is being checked off the loop), `writing`
/// (the answer is on its way), `lingering` (the answer is out and our side is shut down; the
/// client's leftovers are read and dropped until it closes, so the kernel does not answer
/// them with a reset that could destroy the answer before the client read it). One timer
/// bounds each phase: a head not complete in time is answered 408; an answer not taken in
/// time, or a client that never closes, is cut off.
///
/// Memory: the TCP handle's `data` holds a retained reference from `start` until both
/// handles (TCP and timer) have run their close callbacks; the last one releases it.
final class MonitorConnection {
    private enum Phase {
        case idle, reading, verifying, writing, lingering, closed
    }

    unowned let listener: MonitorListener
    /// Names the connection in logs (`h7`).
    let id: Int
    private let tcp = UnsafeMutablePointer<uv_tcp_t>.allocate(capacity: 1)
    private let timer = UnsafeMutablePointer<uv_timer_t>.allocate(capacity: 1)
    private let writeRequest = UnsafeMutablePointer<uv_write_t>.allocate(capacity: 1)
    private let shutdownRequest = UnsafeMutablePointer<uv_shutdown_t>.allocate(capacity: 1)
    private var parser: HTTPRequestParser
    /// The answer being written; kept alive here until the write callback.
    private var outgoing: [UInt8] = []
    private var phase = Phase.idle
    private var openHandles = 0
    private let timeoutMs: Int
    /// Where the connection comes from, for its log lines (`peer=…`), once accepted.
    private(set) var peer = PeerAddress.unknown

    /// Whether the connection may be closed to make room for a new one: it has not sent a
    /// whole request yet (a slow or silent client), its token is being checked (the verdict
    /// is still counted), or it was answered and lingers.
    var mayBeEvicted: Bool {
        switch phase {
        case .idle, .reading, .verifying, .lingering: return true
        case .writing, .closed: return false
        }
    }

    /// How long a client may keep the connection after its answer was sent.
    private static let lingerMs = 2_000

    /// Creates an unconnected HTTP connection; `start` accepts the socket.
    init(listener: MonitorListener, id: Int, timeoutMs: Int, maxHeadBytes: Int) {
        self.listener = listener
        self.id = id
        self.timeoutMs = timeoutMs
        parser = HTTPRequestParser(maxHeadBytes: maxHeadBytes)
    }

    deinit {
        tcp.deallocate()
        timer.deallocate()
        writeRequest.deallocate()
        shutdownRequest.deallocate()
    }

    private var stream: UnsafeMutablePointer<uv_stream_t> {
        UnsafeMutableRawPointer(tcp).assumingMemoryBound(to: uv_stream_t.self)
    }

    /// Accepts the pending connection, arms the deadline and starts reading.
    /// - Returns: false when the socket could not be set up (the connection is then closed).
    func start(from listening: UnsafeMutablePointer<uv_stream_t>, loop: UnsafeMutablePointer<uv_loop_t>) -> Bool {
        guard uv_tcp_init(loop, tcp) == 0 else { return false }
        let retained = Unmanaged.passRetained(self).toOpaque()
        tcp.pointee.data = retained
        openHandles = 1
        guard uv_timer_init(loop, timer) == 0 else {
            close()
            return false
        }
        timer.pointee.data = retained
        openHandles = 2
        writeRequest.pointee.data = retained
        shutdownRequest.pointee.data = retained
        phase = .reading
        guard uv_accept(listening, stream) == 0 else {
            close()
            return false
        }
        peer = PeerAddress.of(tcp: tcp)
        arm(timeoutMs)
        return startReading()
    }

    private func arm(_ milliseconds: Int) {
        uv_timer_start(timer, { timer in
            guard let timer, let data = timer.pointee.data else { return }
            Unmanaged<MonitorConnection>.fromOpaque(data).takeUnretainedValue().deadlinePassed()
        }, UInt64(max(1, milliseconds)), 0)
    }

    private func startReading() -> Bool {
        let status = uv_read_start(stream, { handle, _, buffer in
            guard let handle, let buffer, let data = handle.pointee.data else { return }
            let connection = Unmanaged<MonitorConnection>.fromOpaque(data).takeUnretainedValue()
            buffer.pointee = connection.listener.server.main.readBuffer
        }, { stream, count, _ in
            guard let stream, let data = stream.pointee.data else { return }
            Unmanaged<MonitorConnection>.fromOpaque(data).takeUnretainedValue().didRead(count)
        })
        guard status == 0 else {
            close()
            return false
        }
        return true
    }

    private func didRead(_ count: Int) {
        switch phase {
        case .reading:
            guard count >= 0 else {
                // A client that half-closed in the middle of a head hears why; one that
                // went away (or sent nothing) is simply closed.
                if count == Int(UV_EOF.rawValue) && parser.hasStarted {
                    log("incomplete request", .badRequest)
                    send(.plain(.badRequest), includeBody: true)
                } else {
                    close()
                }
                return
            }
            let bytes = UnsafeRawBufferPointer(start: listener.server.main.readBufferBytes.baseAddress, count: count)
            switch parser.feed(bytes) {
            case .incomplete:
                return
            case .complete(let request):
                listener.serve(request, on: self)
            case .rejected(let status):
                log("bad request", status)
                send(.plain(status), includeBody: true)
            }
        case .lingering:
            if count < 0 { close() }
        case .idle, .verifying, .writing, .closed:
            return
        }
    }

    /// Whether the connection still waits for its answer (it may have been closed meanwhile).
    var awaitsAnswer: Bool { phase == .reading || phase == .verifying }

    /// Stops reading while the request's token is verified off the loop; the deadline runs on.
    func awaitVerdict() {
        guard phase == .reading else { return }
        phase = .verifying
        uv_read_stop(stream)
    }

    /// Sends the answer to the request this connection read (once; nothing when closed).
    /// - Parameters:
    ///   - response: the answer.
    ///   - request: the request, for the log line and HEAD.
    func answer(_ response: HTTPResponse, to request: HTTPRequest) {
        guard awaitsAnswer else { return }
        log(request.method + " " + request.path, response.status)
        send(response, includeBody: request.method != "HEAD")
    }

    private func deadlinePassed() {
        switch phase {
        case .reading:
            log("request timeout", .requestTimeout)
            send(.plain(.requestTimeout), includeBody: true)
        case .verifying, .writing, .lingering, .idle:
            close()
        case .closed:
            return
        }
    }

    /// Writes the answer (bounded by a fresh deadline); the rest happens in `written`.
    private func send(_ response: HTTPResponse, includeBody: Bool) {
        phase = .writing
        uv_read_stop(stream)
        outgoing = response.serialized(includeBody: includeBody)
        arm(timeoutMs)
        let status = outgoing.withUnsafeMutableBytes { bytes -> Int32 in
            var buffer = uv_buf_init(bytes.baseAddress?.assumingMemoryBound(to: CChar.self), UInt32(bytes.count))
            // `outgoing` is not touched again until the callback, so the bytes stay put.
            return uv_write(writeRequest, stream, &buffer, 1) { request, status in
                guard let request, let data = request.pointee.data else { return }
                Unmanaged<MonitorConnection>.fromOpaque(data).takeUnretainedValue().written(status: status)
            }
        }
        if status != 0 { close() }
    }

    private func written(status: Int32) {
        guard phase == .writing else { return }
        guard status == 0 else {
            close()
            return
        }
        phase = .lingering
        outgoing = []
        let shutdown = uv_shutdown(shutdownRequest, stream) { request, status in
            guard status != 0, let request, let data = request.pointee.data else { return }
            Unmanaged<MonitorConnection>.fromOpaque(data).takeUnretainedValue().close()
        }
        guard shutdown == 0 else {
            close()
            return
        }
        arm(min(timeoutMs, Self.lingerMs))
        _ = startReading()
    }

    /// Closes both handles; the object is released once both close callbacks ran.
    func close() {
        guard phase != .closed else { return }
        phase = .closed
        listener.connectionClosed(id)
        let closed: uv_close_cb = { handle in
            guard let handle, let data = handle.pointee.data else { return }
            Unmanaged<MonitorConnection>.fromOpaque(data).takeUnretainedValue().handleClosed()
        }
        if openHandles >= 1 {
            uv_read_stop(stream)
            uv_close(UnsafeMutableRawPointer(tcp).assumingMemoryBound(to: uv_handle_t.self), closed)
        }
        if openHandles >= 2 {
            uv_timer_stop(timer)
            uv_close(UnsafeMutableRawPointer(timer).assumingMemoryBound(to: uv_handle_t.self), closed)
        }
    }

    private func handleClosed() {
        openHandles -= 1
        guard openHandles == 0 else { return }
        Unmanaged.passUnretained(self).release()
    }

    private func log(_ what: String, _ status: HTTPStatus) {
        listener.server.logger.debug("http", ["http": "h" + String(id), "peer": peer, "request": what,
                                                      "status": status.rawValue])
    }
}
