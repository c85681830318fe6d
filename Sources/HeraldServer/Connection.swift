import CLibUV
import HeraldBroker
import HeraldWire

/// One client connection on one loop: its stream handle, line framer and write state.
///
/// Reading: libuv fills the loop's shared read buffer; complete lines go straight to the
/// broker and only an unfinished last line is copied (by the framer). Writing: the
/// broker's queued bytes are swapped into `inFlightBytes` and tried with `uv_try_write`;
/// whatever the kernel does not take goes out with one `uv_write`, and nothing else is
/// written until it completes, so the queue fills and the next flush sends it in one go.
final class Connection {
    unowned let server: Server
    /// The broker's state for this connection.
    let session: Session
    private let handle: UnsafeMutableRawPointer
    private let writeRequest: UnsafeMutablePointer<uv_write_t>
    private var framer: LineFramer
    /// Bytes being written by the pending `uv_write`; untouched until its callback.
    private var inFlightBytes: [UInt8] = []
    private var isWriting = false
    private(set) var isClosing = false

    /// Buffers past this capacity are released once empty, so one burst does not pin memory.
    private static let retainedCapacity = 1 << 20

    /// Memory large enough for any stream handle the daemon uses (TCP or pipe).
    static func allocateStreamHandle() -> UnsafeMutableRawPointer {
        let size = max(MemoryLayout<uv_tcp_t>.size, MemoryLayout<uv_pipe_t>.size)
        return UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 16)
    }

    /// Accepts a pending connection from `listener` and starts reading.
    /// - Throws: UVError when the handle cannot be set up; nothing is leaked then.
    init(server: Server, listener: UnsafeMutablePointer<uv_stream_t>, isTCP: Bool, id: Int) throws(UVError) {
        self.server = server
        self.handle = Connection.allocateStreamHandle()
        self.writeRequest = UnsafeMutablePointer<uv_write_t>.allocate(capacity: 1)
        self.framer = LineFramer(maxLine: server.broker.config.maxLine)
        let status = isTCP
            ? uv_tcp_init(server.loop, handle.assumingMemoryBound(to: uv_tcp_t.self))
            : uv_pipe_init(server.loop, handle.assumingMemoryBound(to: uv_pipe_t.self), 0)
        guard status == 0 else {
            handle.deallocate()
            writeRequest.deallocate()
            throw UVError("init client handle", status)
        }
        self.session = server.broker.connect(id: id, now: server.now)
        handlePointer.pointee.data = Unmanaged.passRetained(self).toOpaque()
        writeRequest.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        let accepted = uv_accept(listener, stream)
        guard accepted == 0 else {
            close()
            throw UVError("accept", accepted)
        }
        if isTCP { uv_tcp_nodelay(handle.assumingMemoryBound(to: uv_tcp_t.self), 1) }
        startReading()
    }

    deinit {
        handle.deallocate()
        writeRequest.deallocate()
    }

    private var stream: UnsafeMutablePointer<uv_stream_t> { handle.assumingMemoryBound(to: uv_stream_t.self) }
    private var handlePointer: UnsafeMutablePointer<uv_handle_t> { handle.assumingMemoryBound(to: uv_handle_t.self) }

    /// Applies a reloaded `max_line`.
    func setMaxLine(_ maxLine: Int) { framer.maxLine = maxLine }

    private func startReading() {
        let status = uv_read_start(stream, { handle, _, buffer in
            guard let handle, let buffer, let data = handle.pointee.data else { return }
            let connection = Unmanaged<Connection>.fromOpaque(data).takeUnretainedValue()
            buffer.pointee = connection.server.readBuffer
        }, { stream, count, _ in
            guard let stream, let data = stream.pointee.data else { return }
            Unmanaged<Connection>.fromOpaque(data).takeUnretainedValue().didRead(count)
        })
        if status != 0 { close() }
    }

    /// Handles one read: lines to the broker, EOF or error closes.
    private func didRead(_ count: Int) {
        guard count > 0 else {
            if count < 0 { close() }
            return
        }
        let broker = server.broker
        let now = server.now
        broker.stats.bytesIn += count
        broker.heard(from: session, now: now)
        let bytes = UnsafeRawBufferPointer(start: server.readBufferBytes.baseAddress, count: count)
        framer.feed(bytes) { framed in
            switch framed {
            case .line(let line): broker.handleLine(line, from: session, now: now)
            case .tooLong(let length): broker.lineTooLong(from: session, length: length, now: now)
            }
        }
        if session.closeAfterFlush { uv_read_stop(stream) }
    }

    /// Sends what the broker queued, then closes if a close was asked for and all is out.
    func flush() {
        guard !isClosing else { return }
        if !isWriting && session.hasWritableOutput { startWrite() }
        if session.closeAfterFlush && !isWriting && session.outbound.isEmpty { close() }
    }

    private func startWrite() {
        session.takeOutbound(into: &inFlightBytes)
        let total = inFlightBytes.count
        let written = tryWrite()
        guard written >= 0 else {
            close()
            return
        }
        server.broker.stats.bytesOut += written
        if written == total {
            recycleInFlight()
            return
        }
        writeRemainder(from: written)
    }

    private func tryWrite() -> Int {
        let status = inFlightBytes.withUnsafeMutableBytes { bytes -> Int32 in
            var buffer = uv_buf_init(bytes.baseAddress?.assumingMemoryBound(to: CChar.self), UInt32(bytes.count))
            return uv_try_write(stream, &buffer, 1)
        }
        if status == UV_EAGAIN.rawValue { return 0 }
        return Int(status)
    }

    /// Hands the unwritten tail to `uv_write`.
    ///
    /// The pointer outlives `withUnsafeMutableBytes`: that is safe here because
    /// `inFlightBytes` is neither mutated nor released until the write callback runs
    /// (`isWriting` guards it, and the close callback comes after a cancelled write's).
    private func writeRemainder(from offset: Int) {
        let remaining = inFlightBytes.count - offset
        let status = inFlightBytes.withUnsafeMutableBytes { bytes -> Int32 in
            let base = bytes.baseAddress.map { $0 + offset }?.assumingMemoryBound(to: CChar.self)
            var buffer = uv_buf_init(base, UInt32(remaining))
            return uv_write(writeRequest, stream, &buffer, 1) { request, status in
                guard let request, let data = request.pointee.data else { return }
                Unmanaged<Connection>.fromOpaque(data).takeUnretainedValue().didWrite(status: status)
            }
        }
        guard status == 0 else {
            close()
            return
        }
        isWriting = true
        session.inFlight = remaining
    }

    private func didWrite(status: Int32) {
        isWriting = false
        if status == 0 { server.broker.stats.bytesOut += session.inFlight }
        session.inFlight = 0
        guard !isClosing else { return }
        guard status == 0 else {
            close()
            return
        }
        recycleInFlight()
        flush()
    }

    private func recycleInFlight() {
        if inFlightBytes.capacity > Connection.retainedCapacity {
            inFlightBytes = []
        } else {
            inFlightBytes.removeAll(keepingCapacity: true)
        }
        session.shrinkOutboundIfIdle(above: Connection.retainedCapacity)
    }

    /// Closes the connection; its memory goes in the close callback (handle rule 1).
    func close() {
        guard !isClosing else { return }
        isClosing = true
        server.connectionClosed(self)
        uv_read_stop(stream)
        uv_close(handlePointer) { handle in
            guard let handle, let data = handle.pointee.data else { return }
            Unmanaged<Connection>.fromOpaque(data).release()
        }
    }
}
