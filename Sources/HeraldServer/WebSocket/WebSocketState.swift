/// A WebSocket connection's own state (issue 34; `Connection+WebSocket`): the opening
/// handshake while it is read, then the frame decoder; the bytes the daemon owes the
/// client outside its lines (the 101 or a refusal, pongs, the close frame); and whether
/// the last text message ended its last line.
final class WebSocketState {
    /// Where the connection stands.
    enum Stage {
        /// Reading the upgrade request.
        case handshake(HTTPRequestParser)
        /// Upgraded: frames both ways.
        case open(WebSocketFrameDecoder)
        /// Refused, or a close frame sent: nothing more is read.
        case done
    }

    /// Where the connection stands.
    var stage: Stage = .handshake(HTTPRequestParser(maxHeadBytes: 8_192))
    /// Bytes to write before the next lines: the handshake's answer, pongs, a close frame.
    var pending: [UInt8] = []
    /// Close once `pending` is written (a refused upgrade, a protocol violation).
    var closesAfterPending = false
    /// Whether a close frame was queued (the last frame this side sends).
    var sentClose = false
    /// The buffer the session's queue is swapped with when owed bytes go first
    /// (`takeQueuedWebSocket`), copied after them into the bytes written.
    var spare: [UInt8] = []

    /// Whether frames flow (the upgrade was accepted and no close frame went out).
    var isOpen: Bool {
        if case .open = stage { return !sentClose }
        return false
    }

    /// Queues a close frame with `code` (once) and the close after it.
    func close(code: UInt16, reason: String = "") {
        closesAfterPending = true
        stage = .done
        guard !sentClose else { return }
        sentClose = true
        pending += WebSocketFrameEncoder.close(code: code, reason: reason)
    }
}
