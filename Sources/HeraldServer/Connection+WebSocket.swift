import CLibUV
import HeraldBroker

/// The WebSocket data path of a connection from `ws_port` or `wss_port` (issue 34;
/// shared/design/PROTOCOL.md, "WebSocket"), between the socket (or TLS's plaintext) and the
/// line framer, as TLS sits between the socket and the bytes.
///
/// Reading: the upgrade request is read with the monitor's parser and judged by
/// `WebSocketHandshake`; after the 101, frames are decoded in place in the read buffer
/// (`WebSocketFrameDecoder`) and the text of each read goes to the line framer in one piece,
/// without a copy (`deliverLines`), a message's unterminated last line ended with `\n`. A ping is answered with a pong, a close frame is a
/// half-close (what was read is answered, then the close frame comes back), a violation
/// closes with its RFC code. Writing: `takeQueuedWebSocket` puts what the connection owes
/// first (the handshake's answer, pongs, the close frame) and the session's queued lines
/// after it as one text message, so the one-write-in-flight path stays as it is.
extension Connection {
    /// Input of a WebSocket connection: the handshake, then frames. `bytes` is the loop's
    /// read buffer (or TLS's plaintext in it), which the decoder rewrites in place.
    func deliverWebSocket(_ state: WebSocketState, _ bytes: UnsafeRawBufferPointer) {
        let buffer = UnsafeMutableRawBufferPointer(mutating: bytes)
        switch state.stage {
        case .handshake(var parser):
            let outcome = parser.feed(bytes)
            state.stage = .handshake(parser)
            handshakeRead(state, outcome)
            // Frames sent right behind the upgrade request, in the same read.
            if case .open = state.stage, parser.restStart < bytes.count {
                framesRead(state, UnsafeMutableRawBufferPointer(rebasing: buffer[parser.restStart...]))
            }
        case .open:
            framesRead(state, buffer)
        case .done:
            return
        }
        if !state.pending.isEmpty { flushWebSocket() }
    }

    /// The upgrade request is in (or refused): the 101, or the refusal and the close.
    private func handshakeRead(_ state: WebSocketState, _ outcome: HTTPRequestParser.Outcome) {
        switch outcome {
        case .incomplete:
            return
        case .rejected(let status):
            state.pending = HTTPResponse.plain(status).serialized()
            state.closesAfterPending = true
            state.stage = .done
        case .complete(let request):
            let origins = worker.shared.withLock { _ in worker.server.wsOrigins }
            switch WebSocketHandshake.decide(request, origins: origins, script: WebSocketHandshake.clientScript) {
            case .upgrade(let response):
                state.pending = response
                state.stage = .open(WebSocketFrameDecoder())
                worker.server.logger.debug("websocket upgraded", ["client": "c" + String(session.id), "peer": peer])
            case .answer(let response):
                state.pending = response
                state.closesAfterPending = true
                state.stage = .done
            }
        }
    }

    /// One read's frames, decoded in place: their text to the framer in one piece (split
    /// only where a control frame must be acted on in its turn), pongs queued, a close or a
    /// violation carried out.
    private func framesRead(_ state: WebSocketState, _ buffer: UnsafeMutableRawBufferPointer) {
        guard case .open(var decoder) = state.stage else { return }
        var events: [(textBefore: Int, event: WebSocketFrameDecoder.Event)] = []
        let textCount = decoder.decode(buffer) { events.append(($0, $1)) }
        state.stage = .open(decoder)
        var handed = 0
        func handText(upTo end: Int) {
            guard end > handed, !isClosing else { return }
            deliverLines(UnsafeRawBufferPointer(rebasing: buffer[handed..<end]))
            handed = end
        }
        for (textBefore, event) in events {
            switch event {
            case .ping(let payload):
                if state.isOpen { state.pending += WebSocketFrameEncoder.pong(payload) }
            case .lineEnd:
                handText(upTo: textBefore)
                if !isClosing { [UInt8(10)].withUnsafeBytes { deliverLines($0) } }
            case .close:
                handText(upTo: textBefore)
                // A half-close: the answers go out, then the close frame (`takeQueuedWebSocket`).
                endInput()
            case .fail(let code, let reason):
                handText(upTo: textBefore)
                worker.server.logger.info("websocket protocol violation; closing",
                                          ["client": "c" + String(session.id), "peer": peer, "code": Int(code), "reason": reason])
                if closeReason == nil { closeReason = .webSocket(code) }
                uv_read_stop(stream)
                state.close(code: code, reason: reason)
            }
        }
        handText(upTo: textCount)
    }

    /// Writes what the connection owes now (outside a flush pass: the 101, a pong, a close).
    func flushWebSocket() {
        guard !isClosing else { return }
        if worker.shared.withLock(.flush, { _ in takeQueued() }) { writeTaken() }
    }

    /// Under the broker lock: takes what is owed and the session's lines (as one text
    /// message) when no write is in flight; decides the close.
    /// - Returns: whether `writeTaken` has something to do.
    func takeQueuedWebSocket(_ state: WebSocketState) -> Bool {
        if session.closeAfterFlush {
            if state.isOpen {
                // The broker's last answer is out: the close frame follows it.
                if session.hasNoOutbound { state.close(code: WebSocketFrameDecoder.CloseCode.normal) }
            } else if case .handshake = state.stage {
                // Never upgraded (a silent connection timed out): nothing to say in frames.
                state.closesAfterPending = true
                state.stage = .done
            }
        }
        if inFlightBytes.isEmpty && state.pending.isEmpty && state.isOpen && session.hasWritableOutput {
            // The usual write: the session's lines taken as TCP takes them (a swap, no copy),
            // the frame header written before them from its own buffer (`frameHeader`).
            session.takeOutbound(into: &inFlightBytes)
            session.inFlight = inFlightBytes.count
            frameHeader.removeAll(keepingCapacity: true)
            WebSocketFrameEncoder.appendHeader(opcode: 0x1, length: inFlightBytes.count, to: &frameHeader)
            lastTakenMs = worker.now
        } else if inFlightBytes.isEmpty && (!state.pending.isEmpty || (state.isOpen && session.hasWritableOutput)) {
            // What the connection owes first (the 101, pongs, a close frame), then the lines.
            inFlightBytes += state.pending
            state.pending.removeAll()
            session.inFlight = 0
            if state.isOpen && session.hasWritableOutput {
                session.takeOutbound(into: &state.spare)
                session.inFlight = state.spare.count
                WebSocketFrameEncoder.appendHeader(opcode: 0x1, length: state.spare.count, to: &inFlightBytes)
                inFlightBytes += state.spare
            }
            lastTakenMs = worker.now
        }
        closeWhenWritten = state.closesAfterPending && state.pending.isEmpty
        return !inFlightBytes.isEmpty || closeWhenWritten
    }
}
