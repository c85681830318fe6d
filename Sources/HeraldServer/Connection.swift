import CLibUV
import HeraldBroker
import HeraldTLS
import HeraldWire

/// One client connection on one loop: its stream handle, line framer and write state.
///
/// Reading: libuv fills the loop's shared read buffer; complete lines go straight to the
/// broker (one lock for the whole read) and only an unfinished last line is copied (by
/// the framer). Writing: under the broker lock the session's queued bytes are swapped into
/// `inFlightBytes` (`takeQueued`); outside it they are tried with `uv_try_write`, and
/// whatever the kernel does not take goes out with one `uv_write`. Nothing else is written
/// until that completes, so the queue fills and the next flush sends it in one go.
final class Connection {
    /// Where the socket comes from.
    enum Source {
        /// Accept a pending connection from a listener on this loop.
        case listener(UnsafeMutablePointer<uv_stream_t>)
        /// Adopt a socket accepted on another loop.
        case descriptor(Int32)
    }

    unowned let worker: Worker
    /// The broker's state for this connection; touched only under the broker lock.
    let session: Session
    private let handle: UnsafeMutableRawPointer
    private let writeRequest: UnsafeMutablePointer<uv_write_t>
    private var framer: LineFramer
    /// The TLS session of a connection from the TLS listener (`Connection+TLS`); nil otherwise,
    /// and then the only TLS cost is one `if` per read and per flush.
    let tls: TLSEngine?
    /// Bytes being written; untouched by anyone but this loop until the write completes.
    /// With TLS: plaintext from `takeQueued`, ciphertext once `sealTLS` ran in `writeTaken`.
    var inFlightBytes: [UInt8] = []
    private(set) var isWriting = false
    var closeWhenWritten = false
    private(set) var isClosing = false
    /// Bytes read behind a parked `hello`, not yet framed (`Connection+Verification`): at most
    /// one read's worth, since reading stops while a verification runs.
    var held: [UInt8] = []
    /// Whether a token verification runs for this connection; its lines are held meanwhile.
    var isHolding = false

    /// Buffers past this capacity are released once empty, so one burst does not pin memory.
    private static let retainedCapacity = 1 << 20

    /// Memory large enough for any stream handle the daemon uses (TCP or pipe).
    static func allocateStreamHandle() -> UnsafeMutableRawPointer {
        let size = max(MemoryLayout<uv_tcp_t>.size, MemoryLayout<uv_pipe_t>.size)
        return UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 16)
    }

    /// Sets up the handle, registers the session and starts reading.
    /// - Parameter tls: the server context when the connection came from the TLS listener.
    /// - Throws: UVError when the handle cannot be set up; nothing is leaked then.
    init(worker: Worker, source: Source, isTCP: Bool, id: Int, tls: TLSContext? = nil) throws(UVError) {
        self.tls = try Connection.makeEngine(tls, worker: worker)
        self.worker = worker
        self.handle = Connection.allocateStreamHandle()
        self.writeRequest = UnsafeMutablePointer<uv_write_t>.allocate(capacity: 1)
        let status = isTCP
            ? uv_tcp_init(worker.loop, handle.assumingMemoryBound(to: uv_tcp_t.self))
            : uv_pipe_init(worker.loop, handle.assumingMemoryBound(to: uv_pipe_t.self), 0)
        guard status == 0 else {
            handle.deallocate()
            writeRequest.deallocate()
            throw UVError("init client handle", status)
        }
        let now = worker.now
        let (session, maxLine) = worker.shared.withLock { broker in
            (broker.connect(id: id, now: now), broker.config.maxLine)
        }
        self.session = session
        self.framer = LineFramer(maxLine: maxLine)
        handlePointer.pointee.data = Unmanaged.passRetained(self).toOpaque()
        writeRequest.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        let opened = open(source, isTCP: isTCP)
        guard opened == 0 else {
            close()
            throw UVError("accept", opened)
        }
        if isTCP { uv_tcp_nodelay(handle.assumingMemoryBound(to: uv_tcp_t.self), 1) }
        let peer = isTCP ? Connection.peerAddress(of: handle.assumingMemoryBound(to: uv_tcp_t.self)) : Array("unix".utf8)
        worker.shared.withLock { _ in session.peer = peer }
        worker.server.logger.debug("connected", ["client": "c" + String(id), "worker": worker.index,
                                                 "peer": String(decoding: peer, as: UTF8.self)])
        startReading()
    }

    deinit {
        handle.deallocate()
        writeRequest.deallocate()
    }

    var stream: UnsafeMutablePointer<uv_stream_t> { handle.assumingMemoryBound(to: uv_stream_t.self) }
    private var handlePointer: UnsafeMutablePointer<uv_handle_t> { handle.assumingMemoryBound(to: uv_handle_t.self) }

    private func open(_ source: Source, isTCP: Bool) -> Int32 {
        switch source {
        case .listener(let listener):
            return uv_accept(listener, stream)
        case .descriptor(let fd):
            return isTCP
                ? uv_tcp_open(handle.assumingMemoryBound(to: uv_tcp_t.self), uv_os_sock_t(fd))
                : uv_pipe_open(handle.assumingMemoryBound(to: uv_pipe_t.self), uv_file(fd))
        }
    }

    /// Starts (or, after a verification, restarts) reading.
    func startReading() {
        let status = uv_read_start(stream, { handle, _, buffer in
            guard let handle, let buffer, let data = handle.pointee.data else { return }
            let connection = Unmanaged<Connection>.fromOpaque(data).takeUnretainedValue()
            buffer.pointee = connection.worker.readBuffer
        }, { stream, count, _ in
            guard let stream, let data = stream.pointee.data else { return }
            Unmanaged<Connection>.fromOpaque(data).takeUnretainedValue().didRead(count)
        })
        if status != 0 { close() }
    }

    /// Handles one read: every line of it to the broker under one lock; EOF or error closes.
    private func didRead(_ count: Int) {
        if let tls {
            didReadTLS(tls, count: count)
            return
        }
        guard count > 0 else {
            if count < 0 { close() }
            return
        }
        deliver(UnsafeRawBufferPointer(start: worker.readBufferBytes.baseAddress, count: count))
    }

    /// Hands plaintext to the broker: every complete line under one lock; stops reading when
    /// the broker asked to close after its last answers. A `hello` the broker parks stops the
    /// lines there: the rest is held and its token verified off the loop (`Connection+Verification`).
    func deliver(_ bytes: UnsafeRawBufferPointer) {
        let now = worker.now
        let count = bytes.count
        if isHolding {
            // Only TLS gets here: plaintext of a read that arrived before reading stopped.
            held.append(contentsOf: bytes)
            worker.shared.withLock { broker in
                broker.stats.bytesIn += count
                broker.heard(from: session, now: now)
            }
            return
        }
        let step = worker.shared.withLock { broker -> AfterLines in
            broker.stats.bytesIn += count
            broker.heard(from: session, now: now)
            let consumed = frameLines(bytes, broker: broker, now: now)
            if consumed < count { held.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[consumed...])) }
            return nextStep(broker)
        }
        proceed(step)
    }

    /// Under the broker lock: frames `bytes` into lines for the broker, stopping right after
    /// a `hello` it parked.
    /// - Returns: how many bytes were consumed; the caller holds the rest.
    func frameLines(_ bytes: UnsafeRawBufferPointer, broker: Broker, now: Int) -> Int {
        framer.feed(bytes, limit: { broker.lineLimit(for: session) }, pausing: { session.awaitsVerification }) { framed in
            switch framed {
            case .line(let line): broker.handleLine(line, from: session, now: now)
            case .tooLong(let length): broker.lineTooLong(from: session, length: length, now: now)
            }
        }
    }

    /// Under the broker lock: takes the session's queued bytes if no write is in flight.
    ///
    /// Idempotent: a connection can be listed twice in one flush pass (two loops asked for
    /// it), and bytes already taken but not yet written are never replaced.
    /// - Returns: whether `writeTaken` has something to do (bytes, or a close to carry out).
    func takeQueued() -> Bool {
        guard !isClosing, !isWriting else { return false }
        if let tls { return takeQueuedTLS(tls) }
        if inFlightBytes.isEmpty && session.hasWritableOutput {
            session.takeOutbound(into: &inFlightBytes)
            session.inFlight = inFlightBytes.count
        }
        // Answers held for durability go out before the close.
        closeWhenWritten = session.closeAfterFlush && session.outbound.isEmpty
        return !inFlightBytes.isEmpty || closeWhenWritten
    }

    /// Outside the lock: writes what `takeQueued` took, then closes if asked and all is out.
    ///
    /// Does nothing while a `uv_write` is in flight: its one request must never be queued twice.
    func writeTaken() {
        guard !isClosing, !isWriting else { return }
        if let tls, !sealTLS(tls) {
            close()
            return
        }
        if !inFlightBytes.isEmpty {
            let written = tryWrite()
            guard written >= 0 else {
                close()
                return
            }
            if written < inFlightBytes.count {
                writeRemainder(from: written)
                return
            }
            finishWrite(status: 0)
            return
        }
        if closeWhenWritten { close() }
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
                Unmanaged<Connection>.fromOpaque(data).takeUnretainedValue().finishWrite(status: status)
            }
        }
        guard status == 0 else {
            close()
            return
        }
        isWriting = true
    }

    /// A write finished (at once or in its callback): account for it and send what queued meanwhile.
    private func finishWrite(status: Int32) {
        isWriting = false
        guard !isClosing else { return }
        guard status == 0 else {
            close()
            return
        }
        recycleInFlight()
        let more = worker.shared.withLock { broker -> Bool in
            // `inFlight` is the plaintext taken (what was written, unless TLS sealed it), so
            // bytes_out counts protocol bytes on every transport, like bytes_in.
            broker.stats.bytesOut += session.inFlight
            session.inFlight = 0
            session.shrinkOutboundIfIdle(above: Connection.retainedCapacity)
            return takeQueued()
        }
        if more { writeTaken() }
    }

    private func recycleInFlight() {
        if inFlightBytes.capacity > Connection.retainedCapacity {
            inFlightBytes = []
        } else {
            inFlightBytes.removeAll(keepingCapacity: true)
        }
    }

    /// Closes the connection; its memory goes in the close callback (handle rule 1).
    func close() {
        guard !isClosing else { return }
        isClosing = true
        worker.connectionClosed(self)
        uv_read_stop(stream)
        uv_close(handlePointer) { handle in
            guard let handle, let data = handle.pointee.data else { return }
            Unmanaged<Connection>.fromOpaque(data).release()
        }
    }
}
