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

    /// Its loop's worker, which outlives it (the worker closes every connection's handles
    /// before its loop ends). `unowned(unsafe)`: a checked `unowned` cost a strong retain and
    /// a release on every read, and the budget check reads it after every line.
    unowned(unsafe) let worker: Worker
    /// The broker's state for this connection; touched only under the broker lock.
    let session: Session
    /// Where the connection comes from, for every log line about it (`peer=…`).
    let peer: PeerAddress
    /// Why it ended, once known: the broker's closing error code (read in `takeQueued`), or
    /// what the edge saw (end of stream, a socket error, TLS). Logged when it closes.
    var closeReason: CloseReason?
    /// The TLS handshake deadline (`tls_timeout_ms`, `Connection+TLS`); nil without TLS, once
    /// the handshake is done, or once closed.
    var handshakeTimer: UnsafeMutablePointer<uv_timer_t>?
    private let handle: UnsafeMutableRawPointer
    private let writeRequest: UnsafeMutablePointer<uv_write_t>
    private var framer: LineFramer
    /// The TLS session of a connection from the TLS listener (`Connection+TLS`); nil otherwise,
    /// and then the only TLS cost is one `if` per read and per flush.
    let tls: TLSEngine?
    /// The WebSocket state of a connection from a `ws_port` or `wss_port` listener
    /// (`Connection+WebSocket`); nil otherwise.
    let webSocket: WebSocketState?
    /// Where other loops put this connection's bytes for it to write without the broker
    /// lock (`Worker+Handoff`): plain connections when there is more than one loop; nil
    /// otherwise, and then nothing of it runs.
    let handoff: OutputHandoff?
    /// Set when a take under the lock found a write out and could not hand the session's
    /// bytes to the box (the session closes after its flush): the write's completion takes
    /// the lock to take them.
    var mustTakeAfterWrite = false
    /// The session's bytes on their way behind handed-off ones in `takeQueued`.
    var takeScratch: [UInt8] = []
    /// Frames in the broker's `FrameArena` taken behind `inFlightBytes` (a plain connection
    /// of a one-loop daemon, `Connection+Spans`): written in the same pass, or copied into
    /// `inFlightBytes` when the socket does not take them all.
    var inFlightSpans: [FrameSpan] = []
    /// The arena `inFlightSpans` point into, taken with them under the lock.
    var inFlightArena: FrameArena?
    /// Bytes of the last write that are not in `inFlightBytes` any more (the spans, or the
    /// part written before the rest was copied): counted with it when the write completes.
    var spanWrittenBytes = 0
    /// Bytes being written; untouched by anyone but this loop until the write completes.
    /// With TLS: plaintext from `takeQueued`, ciphertext once `sealTLS` ran in `writeTaken`.
    var inFlightBytes: [UInt8] = []
    /// A WebSocket frame's header, written just before `inFlightBytes` (one `writev`), so
    /// the lines taken from the session are not copied behind it; empty otherwise.
    var frameHeader: [UInt8] = []
    private(set) var isWriting = false
    var closeWhenWritten = false
    private(set) var isClosing = false
    /// Set once the peer ended its input (`Connection+HalfClose`): reading never resumes.
    var inputHasEnded = false
    /// Bytes read behind a parked `hello`, not yet framed (`Connection+Verification`): at most
    /// one read's worth, since reading stops while a verification runs.
    var held: [UInt8] = []
    /// Where the unframed part of `held` starts: framing a slice advances it instead of
    /// copying the rest, so a connection yielding every pass copies nothing.
    var heldStart = 0
    /// Whether a token verification runs for this connection; its lines are held meanwhile.
    var isHolding = false
    /// The loop pass (`Worker.pass`) this connection's line budget belongs to, when it began
    /// (`uv_hrtime`), and the lines handled since (see `Connection+Budget.swift`).
    var budgetPass = -1
    var budgetStart: UInt64 = 0
    var budgetLines = 0
    /// When the budget last looked at the clock, and how many lines it lets pass between
    /// two looks (`Connection+Budget.swift`).
    var budgetLastLook: UInt64 = 0
    var budgetStride = Connection.maxBudgetStride
    /// When (loop ms) queued bytes were last taken for writing (`LargeBufferKeeper`).
    var lastTakenMs = 0
    /// Set while reading is paused because the node's cluster work is over its bound
    /// (`Connection+Backpressure`); the worker resumes it when the engine says so.
    var isBackpressured = false
    /// Its last framing stopped because the node's liveness is in doubt (`Connection+Doubt`).
    var isHeldForDoubt = false
    /// The loop pass (`Worker.pass`) in which this connection last queued cluster work, so
    /// that its worker lists it once per pass (`Worker.clusterWriters`).
    var clusterWorkPass = -1

    /// Buffers past this capacity are released once empty, so one burst does not pin memory.
    static let retainedCapacity = 1 << 20

    /// Memory large enough for any stream handle the daemon uses (TCP or pipe).
    static func allocateStreamHandle() -> UnsafeMutableRawPointer {
        let size = max(MemoryLayout<uv_tcp_t>.size, MemoryLayout<uv_pipe_t>.size)
        return UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 16)
    }

    /// Accepts the socket, registers the session (with the peer's address) and starts reading.
    ///
    /// The socket is accepted before the broker hears of it, so the address is known when the
    /// session is made, and a failed accept costs the broker nothing.
    /// - Parameter tls: the server context when the connection came from the TLS listener.
    /// - Throws: UVError when the handle cannot be set up; nothing is leaked then.
    init(worker: Worker, source: Source, isTCP: Bool, id: Int, tls: TLSContext? = nil, webSocket: Bool = false) throws(UVError) {
        self.tls = try Connection.makeEngine(tls, worker: worker)
        self.webSocket = webSocket ? WebSocketState() : nil
        self.worker = worker
        let handle = Connection.allocateStreamHandle()
        let status = isTCP
            ? uv_tcp_init(worker.loop, handle.assumingMemoryBound(to: uv_tcp_t.self))
            : uv_pipe_init(worker.loop, handle.assumingMemoryBound(to: uv_pipe_t.self), 0)
        guard status == 0 else {
            handle.deallocate()
            throw UVError("init client handle", status)
        }
        let opened = Connection.open(source, handle: handle, isTCP: isTCP)
        guard opened == 0 else {
            Connection.discard(handle)
            throw UVError("accept", opened)
        }
        self.handle = handle
        self.writeRequest = UnsafeMutablePointer<uv_write_t>.allocate(capacity: 1)
        let peer = isTCP ? PeerAddress.of(tcp: handle.assumingMemoryBound(to: uv_tcp_t.self)) : PeerAddress.unix
        self.peer = peer
        let now = worker.now
        let server = worker.server
        let (session, maxLine, handshakeMs) = worker.shared.withLock { broker in
            let session = broker.connect(id: id, now: now)
            session.peer = peer.hostBytes
            session.transport = Array((webSocket ? (tls == nil ? "ws" : "wss") : tls == nil ? (isTCP ? "tcp" : "unix") : "tls").utf8)
            return (session, broker.config.maxLine, server.tlsTimeoutMs)
        }
        self.session = session
        self.handoff = self.tls == nil && !webSocket && worker.server.workers.count > 1
            ? worker.openHandoff(for: id, session: session) : nil
        if self.tls == nil && !webSocket {
            // Deliveries may queue frames by reference (`FrameArena`): this connection writes
            // them itself, or from its hand-off box.
            worker.shared.withLock { _ in session.sharesFrames = true }
        }
        self.framer = LineFramer(maxLine: maxLine)
        handlePointer.pointee.data = Unmanaged.passRetained(self).toOpaque()
        writeRequest.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        if isTCP { uv_tcp_nodelay(handle.assumingMemoryBound(to: uv_tcp_t.self), 1) }
        server.logger.debug("connected", ["client": "c" + String(id), "peer": peer, "worker": worker.index])
        if self.tls != nil { startHandshakeTimer(milliseconds: handshakeMs) }
        startReading()
    }

    deinit {
        handle.deallocate()
        writeRequest.deallocate()
    }

    var stream: UnsafeMutablePointer<uv_stream_t> { handle.assumingMemoryBound(to: uv_stream_t.self) }
    private var handlePointer: UnsafeMutablePointer<uv_handle_t> { handle.assumingMemoryBound(to: uv_handle_t.self) }

    private static func open(_ source: Source, handle: UnsafeMutableRawPointer, isTCP: Bool) -> Int32 {
        switch source {
        case .listener(let listener):
            return uv_accept(listener, handle.assumingMemoryBound(to: uv_stream_t.self))
        case .descriptor(let fd):
            return isTCP
                ? uv_tcp_open(handle.assumingMemoryBound(to: uv_tcp_t.self), uv_os_sock_t(fd))
                : uv_pipe_open(handle.assumingMemoryBound(to: uv_pipe_t.self), uv_file(fd))
        }
    }

    /// Closes a handle no `Connection` came to own (the accept failed); its memory goes in
    /// the close callback (handle rule 1).
    private static func discard(_ handle: UnsafeMutableRawPointer) {
        uv_close(handle.assumingMemoryBound(to: uv_handle_t.self)) { handle in
            UnsafeMutableRawPointer(handle)?.deallocate()
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
        if status != 0 { close(reason: Connection.endReason(Int(status))) }
    }

    /// Handles one read: every line of it to the broker under one lock; EOF starts a
    /// half-close (`Connection+HalfClose`), an error closes.
    private func didRead(_ count: Int) {
        if let tls {
            didReadTLS(tls, count: count)
            return
        }
        guard count > 0 else {
            if count < 0 { readEnded(count) }
            return
        }
        deliver(UnsafeRawBufferPointer(start: worker.readBufferBytes.baseAddress, count: count))
    }

    /// Hands plaintext to the broker: every complete line under one lock; stops reading when
    /// the broker asked to close after its last answers. A `hello` the broker parks stops the
    /// lines there: the rest is held and its token verified off the loop (`Connection+Verification`).
    func deliver(_ bytes: UnsafeRawBufferPointer) {
        if let webSocket { return deliverWebSocket(webSocket, bytes) }
        deliverLines(bytes)
    }

    /// `deliver` for bare lines (a WebSocket connection's decoded text comes here too).
    func deliverLines(_ bytes: UnsafeRawBufferPointer) {
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
        let step = worker.shared.withLock(.read) { broker -> AfterLines in
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
        isHeldForDoubt = mustHoldForDoubt(now: now, broker: broker)
        if isHeldForDoubt { return 0 }
        // The framer asks `pausingBefore` only after a line: held lines framed again while
        // the session is still parked (a `hello` verified off the loop that now waits for a
        // cluster grant) must not let their first line through.
        if session.isParked && !broker.mayPipeline(bytes, for: session) { return 0 }
        // In cluster mode: did these lines queue work for Redis (`Connection+Backpressure`)?
        let queuedBefore = broker.cluster?.queuedWork
        // Only these lines' events pace this connection (`Broker+Pacing`).
        broker.clearPacing()
        var lookahead = broker.lookahead(over: bytes)
        let consumed = framer.feed(bytes, limit: { broker.lineLimit(for: session) },
                                   pausingBefore: { rest in
                                       (session.isParked && !broker.mayPipeline(rest, for: session)) || hasSpentBudget()
                                           || mustWaitForRate(broker, now: now) || broker.isPacing
                                   }) { framed in
            switch framed {
            case .line(let line):
                if lookahead != nil { broker.advance(&lookahead!) }
                broker.handleLine(line, from: session, now: now)
            case .tooLong(let length): broker.lineTooLong(from: session, length: length, now: now)
            }
        }
        if let queuedBefore, broker.cluster?.queuedWork != queuedBefore { queuedClusterWork() }
        return consumed
    }

    /// Under the broker lock: takes the session's queued bytes if no write is in flight.
    ///
    /// Idempotent: a connection can be listed twice in one flush pass (two loops asked for
    /// it), and bytes already taken but not yet written are never replaced.
    /// - Returns: whether `writeTaken` has something to do (bytes, or a close to carry out).
    func takeQueued() -> Bool {
        // The closing frame is the last one queued, and nothing is queued after it: read its
        // code before any of the queue is taken.
        if closeReason == nil && session.closeAfterFlush { closeReason = CloseReason.closing(session.outbound) }
        guard !isClosing, !isWriting else {
            if isWriting && handoff != nil { keepForWriteCompletion() }
            session.keepSpansInQueue()
            return false
        }
        if let tls { return takeQueuedTLS(tls) }
        if let webSocket { return takeQueuedWebSocket(webSocket) }
        if let handoff {
            takeHandedOffAndQueued(handoff)
        } else if inFlightBytes.isEmpty && inFlightSpans.isEmpty && session.hasWritableOutput {
            session.inFlight = takeSessionOutput()
            lastTakenMs = worker.now
        }
        // Answers held for durability go out before the close.
        closeWhenWritten = session.closeAfterFlush && session.hasNoOutbound
        return !inFlightBytes.isEmpty || !inFlightSpans.isEmpty || closeWhenWritten
    }

    /// Outside the lock: writes what `takeQueued` took, then closes if asked and all is out.
    ///
    /// Does nothing while a `uv_write` is in flight: its one request must never be queued twice.
    func writeTaken() {
        if writeTakenAtOnce() { finishWrite(status: 0) }
    }

    /// `writeTaken` without the bookkeeping of a write that completed at once, so that a loop
    /// can do it for all its connections under one lock (`Worker.write`).
    /// - Returns: whether every taken byte was written: the caller must then call
    ///   `accountWritten` under the broker lock.
    func writeTakenAtOnce() -> Bool {
        guard !isClosing, !isWriting else { return false }
        if !frameHeader.isEmpty && tls != nil { joinFrameHeader() }
        if let tls, !sealTLS(tls) {
            close(reason: .tlsFailed)
            return false
        }
        if !inFlightSpans.isEmpty { return writeSpans() }
        if !inFlightBytes.isEmpty {
            let written = frameHeader.isEmpty ? tryWrite() : tryWriteFramed()
            guard written >= 0 else {
                close(reason: Connection.endReason(written))
                return false
            }
            if !frameHeader.isEmpty {
                // Not all of it went: the rest goes the usual way, as one buffer.
                if written == frameHeader.count + inFlightBytes.count {
                    frameHeader.removeAll(keepingCapacity: true)
                    return true
                }
                joinFrameHeader()
            }
            if written < inFlightBytes.count {
                writeRemainder(from: written)
                return false
            }
            return true
        }
        if closeWhenWritten { close() }
        return false
    }

    /// Puts `frameHeader` in front of `inFlightBytes` (a copy: TLS, or a partial write).
    private func joinFrameHeader() {
        inFlightBytes.insert(contentsOf: frameHeader, at: 0)
        frameHeader.removeAll(keepingCapacity: true)
    }

    /// `tryWrite` of the frame header and the lines as two buffers.
    private func tryWriteFramed() -> Int {
        let status = frameHeader.withUnsafeMutableBytes { header -> Int32 in
            inFlightBytes.withUnsafeMutableBytes { bytes -> Int32 in
                withUnsafeTemporaryAllocation(of: uv_buf_t.self, capacity: 2) { buffers -> Int32 in
                    buffers[0] = uv_buf_init(header.baseAddress?.assumingMemoryBound(to: CChar.self), UInt32(header.count))
                    buffers[1] = uv_buf_init(bytes.baseAddress?.assumingMemoryBound(to: CChar.self), UInt32(bytes.count))
                    return uv_try_write(stream, buffers.baseAddress, 2)
                }
            }
        }
        if status == UV_EAGAIN.rawValue { return 0 }
        return Int(status)
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
    func writeRemainder(from offset: Int) {
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
            close(reason: Connection.endReason(Int(status)))
            return
        }
        isWriting = true
    }

    /// A write finished (at once or in its callback): account for it and send what queued meanwhile.
    private func finishWrite(status: Int32) {
        isWriting = false
        guard !isClosing else { return }
        guard status == 0 else {
            close(reason: Connection.endReason(Int(status)))
            return
        }
        if let handoff, closeReason == nil {
            // What was handed over meanwhile goes out without the lock, which is taken only
            // when a take under it found this write out (`keepForWriteCompletion`).
            noteHandedWritten(handoff)
            pumpHandoff()
            if isWriting || isClosing || !mustTakeAfterWrite { return }
            mustTakeAfterWrite = false
        }
        let (more, isLarge) = worker.shared.withLock(.writes) { broker in accountWritten(broker) }
        // Large buffers stay while the connection streams (`LargeBufferKeeper`).
        if isLarge { worker.largeBuffers.hold(self) }
        if more { writeTaken() }
    }

    /// Under the broker lock, after a complete write: empties the written buffer (keeping its
    /// memory), counts it and takes what queued meanwhile.
    /// - Returns: `more`, whether `writeTaken` has something to do again; `isLarge`, whether
    ///   the connection now holds a buffer for `LargeBufferKeeper` to watch.
    func accountWritten(_ broker: Broker) -> (more: Bool, isLarge: Bool) {
        if handoff != nil {
            // Handed-off bytes may wait in the box, counted in `inFlight`: only what was
            // written leaves it.
            handoff?.settle(broker)
            let written = inFlightBytes.count + spanWrittenBytes
            broker.stats.bytesOut += written
            session.inFlight -= written
            inFlightBytes.removeAll(keepingCapacity: true)
            spanWrittenBytes = 0
        } else {
            spanWrittenBytes = 0
            inFlightBytes.removeAll(keepingCapacity: true)
            // `inFlight` is the plaintext taken (what was written, unless TLS sealed it), so
            // bytes_out counts protocol bytes on every transport, like bytes_in.
            broker.stats.bytesOut += session.inFlight
            session.inFlight = 0
        }
        broker.wrotePaced(session)
        let isLarge = inFlightBytes.capacity > Connection.retainedCapacity
            || session.outboundCapacity > Connection.retainedCapacity
        return (takeQueued(), isLarge)
    }

    /// The reason for a negative libuv status from a read or write: EOF is the peer's close.
    static func endReason(_ status: Int) -> CloseReason {
        status == Int(UV_EOF.rawValue) ? .peerClosed : .socketError(String(cString: uv_err_name(Int32(status))))
    }

    /// Under the broker lock, for `LargeBufferKeeper`: if nothing was taken for writing since
    /// `idleSince` (loop ms) and no write is in flight, moves the written buffer into
    /// `released` (freed by the caller outside the lock) and frees the session's empty queue
    /// when it is large.
    /// - Returns: whether the connection holds no large buffer any more (or is closing).
    func releaseLargeBuffers(ifIdleSince idleSince: Int, into released: inout [[UInt8]]) -> Bool {
        if isClosing { return true }
        guard !isWriting, lastTakenMs <= idleSince, inFlightBytes.isEmpty else { return false }
        if inFlightBytes.capacity > Connection.retainedCapacity {
            released.append(inFlightBytes)
            inFlightBytes = []
        }
        session.shrinkOutboundIfIdle(above: Connection.retainedCapacity)
        let boxIsSmall = handoff.map { worker.shrinkHandoff($0, above: Connection.retainedCapacity) } ?? true
        return session.outboundCapacity <= Connection.retainedCapacity && boxIsSmall
    }

    /// Closes the connection; its memory goes in the close callback (handle rule 1).
    /// - Parameter reason: why, unless a reason is known already (the broker's comes first).
    func close(reason: CloseReason? = nil) {
        guard !isClosing else { return }
        isClosing = true
        if closeReason == nil { closeReason = reason }
        dropSpans()
        stopHandshakeTimer()
        worker.largeBuffers.forget(self)
        worker.throttled.forget(self)
        worker.connectionClosed(self)
        uv_read_stop(stream)
        uv_close(handlePointer) { handle in
            guard let handle, let data = handle.pointee.data else { return }
            Unmanaged<Connection>.fromOpaque(data).release()
        }
    }
}
