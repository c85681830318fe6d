import CLibUV
import HeraldBroker
import HeraldTLS

/// The TLS data path of a connection from the `tls_port` listener.
///
/// Reading: the ciphertext libuv put in the loop's shared read buffer is copied into the
/// engine's incoming memory BIO, after which the buffer is free again and receives the
/// plaintext, which goes through `deliver` exactly as a plain read does. Writing: `takeQueued`
/// takes the session's plaintext as usual (but only once the handshake is done), and
/// `writeTaken` first seals it (`sealTLS`): the plaintext is encrypted into the outgoing BIO
/// and `inFlightBytes` is refilled with the ciphertext, so the `uv_try_write`/`uv_write`
/// path and its one-write-in-flight rule stay exactly as for plain TCP.
extension Connection {
    /// Creates the connection's TLS engine when it came from the TLS listener.
    /// - Throws: UVError (ENOMEM) when OpenSSL cannot allocate one; the reason is logged.
    static func makeEngine(_ context: TLSContext?, worker: Worker) throws(UVError) -> TLSEngine? {
        guard let context else { return nil }
        do {
            return try TLSEngine(context: context)
        } catch {
            worker.server.logger.warn("tls session setup failed", ["error": error.description])
            throw UVError("tls session", UV_ENOMEM.rawValue)
        }
    }

    /// One read on a TLS connection: handshake, then decrypt and deliver; EOF (after the
    /// handshake) starts a half-close, an error closes.
    func didReadTLS(_ tls: TLSEngine, count: Int) {
        guard count > 0 else {
            if count < 0 {
                guard tls.isHandshakeComplete else {
                    logTLS("tls handshake aborted", reason: "peer closed the connection")
                    close(reason: .tlsFailed)
                    return
                }
                readEnded(count)
            }
            return
        }
        let buffer = worker.readBufferBytes
        tls.feed(UnsafeRawBufferPointer(start: buffer.baseAddress, count: count))
        var justEstablished = false
        if !tls.isHandshakeComplete {
            switch tls.handshake() {
            case .inProgress:
                sendTLSOutput(tls)
                return
            case .failed(let error):
                handshakeFailed(tls, error)
                return
            case .complete:
                justEstablished = true
                stopHandshakeTimer()
                worker.server.logger.debug("tls established", ["client": "c" + String(session.id), "peer": peer,
                                                               "tls": tls.negotiated])
            }
        }
        decryptAndDeliver(tls, into: buffer)
        if justEstablished || tls.hasCiphertext { sendTLSOutput(tls) }
    }

    /// Decrypts everything fed so far, one read buffer at a time.
    private func decryptAndDeliver(_ tls: TLSEngine, into buffer: UnsafeMutableRawBufferPointer) {
        while !isClosing {
            var filled = 0
            var stop: TLSEngine.ReadResult?
            while filled < buffer.count {
                let result = tls.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[filled...]))
                guard case .bytes(let produced) = result else {
                    stop = result
                    break
                }
                filled += produced
            }
            if filled > 0 { deliver(UnsafeRawBufferPointer(rebasing: buffer[..<filled])) }
            switch stop {
            case nil:
                continue
            case .needMore?, .bytes?:
                return
            case .closed?:
                // close_notify: the peer sends nothing more; like EOF on plain TCP, a half-close.
                endInput()
                return
            case .failed(let error)?:
                logTLS("tls connection failed", reason: error.description)
                close(reason: .tlsFailed)
                return
            }
        }
    }

    /// Writes handshake messages (or anything else the engine produced outside `writeTaken`),
    /// and what the broker queued while the handshake was still under way.
    private func sendTLSOutput(_ tls: TLSEngine) {
        guard !isClosing, !isWriting else { return }
        let ready = worker.shared.withLock { _ in takeQueued() }
        if ready { writeTaken() }
    }

    /// Under the broker lock: `takeQueued` for a TLS connection.
    ///
    /// Plaintext is left in the session until the handshake is done (OpenSSL cannot encrypt it
    /// before); handshake bytes waiting in the engine count as something to write.
    func takeQueuedTLS(_ tls: TLSEngine) -> Bool {
        if let webSocket {
            closeWhenWritten = false
            let more = tls.isHandshakeComplete && takeQueuedWebSocket(webSocket)
            return more || tls.hasCiphertext
        }
        if tls.isHandshakeComplete && inFlightBytes.isEmpty && session.hasWritableOutput {
            session.takeOutbound(into: &inFlightBytes)
            session.inFlight = inFlightBytes.count
            lastTakenMs = worker.now
        }
        closeWhenWritten = session.closeAfterFlush && session.hasNoOutbound
        return !inFlightBytes.isEmpty || closeWhenWritten || tls.hasCiphertext
    }

    /// Outside the lock, first thing in `writeTaken`: replaces the plaintext `takeQueued` took
    /// with its TLS records, plus any handshake bytes and, before a close, close_notify.
    ///
    /// Runs only when no write is in flight, so `inFlightBytes` holds plaintext (or nothing)
    /// here: after every `writeTaken` it is either written and recycled, or owned by `uv_write`.
    /// - Returns: false when the engine cannot encrypt any more (the connection is closed then).
    func sealTLS(_ tls: TLSEngine) -> Bool {
        if !inFlightBytes.isEmpty {
            let failure = inFlightBytes.withUnsafeBytes { plaintext -> TLSError? in
                do throws(TLSError) {
                    try tls.write(plaintext)
                    return nil
                } catch {
                    return error
                }
            }
            if let failure {
                logTLS("tls connection failed", reason: failure.description)
                return false
            }
            inFlightBytes.removeAll(keepingCapacity: true)
        }
        if closeWhenWritten { tls.shutdown() }
        tls.takeCiphertext(appendingTo: &inFlightBytes)
        return true
    }

    /// Sends the alert OpenSSL produced (best effort, without waiting), logs, and closes.
    private func handshakeFailed(_ tls: TLSEngine, _ error: TLSError) {
        logTLS("tls handshake failed", reason: error.description)
        if !isWriting {
            var alert: [UInt8] = []
            tls.takeCiphertext(appendingTo: &alert)
            if !alert.isEmpty {
                _ = alert.withUnsafeMutableBytes { bytes -> Int32 in
                    var buffer = uv_buf_init(bytes.baseAddress?.assumingMemoryBound(to: CChar.self), UInt32(bytes.count))
                    return uv_try_write(stream, &buffer, 1)
                }
            }
        }
        close(reason: .tlsFailed)
    }

    /// Peers that fail TLS are routine on an open port (scanners, plain-text clients), so `info`.
    private func logTLS(_ message: String, reason: String) {
        worker.server.logger.info(message, ["client": "c" + String(session.id), "peer": peer, "reason": reason])
    }

    /// Arms the handshake deadline: a peer that connects to the TLS port and then says
    /// nothing, or half a ClientHello, is closed after `milliseconds` instead of holding a
    /// socket until heartbeats notice (the broker hears nothing before the handshake is done).
    ///
    /// The timer's `data` is an unretained reference: `close()` closes the timer before the
    /// connection's own handle, so the callback never runs for a released connection; the
    /// timer's memory is freed in its close callback (handle rule 1).
    /// - Parameter milliseconds: `tls_timeout_ms` when the connection was accepted.
    func startHandshakeTimer(milliseconds: Int) {
        let timer = UnsafeMutablePointer<uv_timer_t>.allocate(capacity: 1)
        guard uv_timer_init(worker.loop, timer) == 0 else {
            timer.deallocate()
            worker.server.logger.warn("tls handshake timer unavailable", ["client": "c" + String(session.id), "peer": peer])
            return
        }
        timer.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        handshakeTimer = timer
        uv_timer_start(timer, { timer in
            guard let timer, let data = timer.pointee.data else { return }
            Unmanaged<Connection>.fromOpaque(data).takeUnretainedValue().handshakeTimedOut()
        }, UInt64(max(0, milliseconds)), 0)
    }

    /// Disarms and closes the handshake deadline (handshake done, or the connection closing).
    func stopHandshakeTimer() {
        guard let timer = handshakeTimer else { return }
        handshakeTimer = nil
        uv_close(UnsafeMutableRawPointer(timer).assumingMemoryBound(to: uv_handle_t.self)) { handle in
            UnsafeMutableRawPointer(handle)?.deallocate()
        }
    }

    private func handshakeTimedOut() {
        guard let tls, !tls.isHandshakeComplete, !isClosing else { return }
        worker.server.logger.info("tls handshake timed out", ["client": "c" + String(session.id), "peer": peer])
        close(reason: .tlsTimeout)
    }
}
