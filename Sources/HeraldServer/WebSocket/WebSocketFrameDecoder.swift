/// The frames a WebSocket client sends (RFC 6455, section 5; issue 34), decoded as they
/// arrive, in whatever pieces the socket gives them: a pure state machine, no I/O. A text
/// payload is unmasked and handed on piece by piece as it comes, so a message of any length
/// costs no more memory here than the piece in hand.
///
/// What it hands on (`Output`): the unmasked bytes of text messages in order (`text`), the end
/// of each text message (`messageEnd`, where the line framer ends a last line without `\n`),
/// pings (to answer with a pong of the same payload), a close (with its code), and a
/// violation (`fail`), after which it takes nothing more: an unmasked frame, a reserved bit
/// or opcode, a fragmented or over-long control frame, a continuation with no message, a new
/// message inside another, a binary message (1003), a length with its top bit set, invalid
/// UTF-8 in a text message (1007, checked across fragment and read boundaries).
struct WebSocketFrameDecoder {
    /// What a piece of input produced.
    enum Output: Equatable {
        /// Unmasked bytes of a text message (valid UTF-8 so far).
        case text([UInt8])
        /// The text message ended (its FIN frame).
        case messageEnd
        /// A ping and its payload (at most 125 bytes).
        case ping([UInt8])
        /// A close frame: its status code (1005 when it carried none) and reason.
        case close(code: UInt16, reason: [UInt8])
        /// The client broke the protocol: close with `code` (RFC 6455, 7.4.1).
        case fail(code: UInt16, reason: String)
    }

    /// The RFC's close codes this side sends.
    enum CloseCode {
        static let normal: UInt16 = 1000
        static let protocolError: UInt16 = 1002
        static let unsupportedData: UInt16 = 1003
        static let noStatus: UInt16 = 1005
        static let invalidPayload: UInt16 = 1007
        static let policy: UInt16 = 1008
        static let tooBig: UInt16 = 1009
    }

    private enum Stage {
        case header
        case payload
        case failed
    }

    private var stage = Stage.header
    /// The header bytes gathered so far (2 to 14).
    private var header: [UInt8] = []
    private var opcode: UInt8 = 0
    private var isFinal = false
    private var mask: (UInt8, UInt8, UInt8, UInt8) = (0, 0, 0, 0)
    private var remaining: UInt64 = 0
    /// How far into the mask the next payload byte is.
    private var maskOffset = 0
    /// A control frame's payload, gathered whole (at most 125 bytes).
    private var control: [UInt8] = []
    /// Whether a text message is open (its first frame came, its final one not yet).
    private var inMessage = false
    private var utf8 = UTF8Validator()

    /// Whether a violation ended the decoding.
    var hasFailed: Bool { stage == .failed }

    /// Decodes `bytes`, calling `output` for what they complete, in order.
    mutating func feed(_ bytes: UnsafeRawBufferPointer, _ output: (Output) -> Void) {
        var at = 0
        while at < bytes.count, stage != .failed {
            switch stage {
            case .header:
                header.append(bytes[at])
                at += 1
                if let failure = headerComplete() {
                    fail(failure, output)
                } else if stage == .payload && remaining == 0 {
                    frameEnded(output)
                }
            case .payload:
                let take = Int(min(remaining, UInt64(bytes.count - at)))
                payload(UnsafeRawBufferPointer(rebasing: bytes[at..<(at + take)]), output)
                at += take
                remaining -= UInt64(take)
                if remaining == 0, stage == .payload { frameEnded(output) }
            case .failed:
                return
            }
        }
    }

    /// Reads the header once it is whole; nil while it is not, or when it is fine.
    private mutating func headerComplete() -> (UInt16, String)? {
        guard header.count >= 2 else { return nil }
        let length7 = header[1] & 0x7F
        let needed = 2 + (length7 == 126 ? 2 : length7 == 127 ? 8 : 0) + 4
        if header.count == 2 {
            if header[0] & 0x70 != 0 { return (CloseCode.protocolError, "a reserved bit is set (no extension was agreed)") }
            if header[1] & 0x80 == 0 { return (CloseCode.protocolError, "a client frame must be masked") }
            opcode = header[0] & 0x0F
            isFinal = header[0] & 0x80 != 0
            if let failure = checkOpcode(length7) { return failure }
        }
        if length7 == 127 && header.count == 3 && header[2] & 0x80 != 0 {
            return (CloseCode.protocolError, "a payload length with its top bit set")
        }
        guard header.count == needed else { return nil }
        var length = UInt64(length7)
        if length7 == 126 {
            length = UInt64(header[2]) << 8 | UInt64(header[3])
        } else if length7 == 127 {
            length = header[2..<10].reduce(0) { $0 << 8 | UInt64($1) }
        }
        let maskAt = needed - 4
        mask = (header[maskAt], header[maskAt + 1], header[maskAt + 2], header[maskAt + 3])
        maskOffset = 0
        remaining = length
        header.removeAll(keepingCapacity: true)
        control.removeAll(keepingCapacity: true)
        stage = .payload
        return nil
    }

    /// The frame kinds a client may send where it sends them.
    private func checkOpcode(_ length7: UInt8) -> (UInt16, String)? {
        switch opcode {
        case 0x0:
            return inMessage ? nil : (CloseCode.protocolError, "a continuation frame with no message to continue")
        case 0x1:
            return inMessage ? (CloseCode.protocolError, "a new message before the last one ended") : nil
        case 0x2:
            return (CloseCode.unsupportedData, "binary messages are not accepted: send the protocol's lines as text")
        case 0x8, 0x9, 0xA:
            if !isFinal { return (CloseCode.protocolError, "a fragmented control frame") }
            if length7 > 125 { return (CloseCode.protocolError, "a control frame longer than 125 bytes") }
            return nil
        default:
            return (CloseCode.protocolError, "an unknown opcode \(opcode)")
        }
    }

    /// Unmasks a piece of the payload: text goes on at once, a control frame's is kept.
    private mutating func payload(_ bytes: UnsafeRawBufferPointer, _ output: (Output) -> Void) {
        var plain = [UInt8](repeating: 0, count: bytes.count)
        let key = [mask.0, mask.1, mask.2, mask.3]
        for index in 0..<bytes.count {
            plain[index] = bytes[index] ^ key[(maskOffset + index) & 3]
        }
        maskOffset = (maskOffset + bytes.count) & 3
        if opcode >= 0x8 {
            control += plain
            return
        }
        inMessage = true
        guard utf8.feed(plain) else {
            return fail((CloseCode.invalidPayload, "a text message that is not UTF-8"), output)
        }
        if !plain.isEmpty { output(.text(plain)) }
    }

    /// A frame's payload is all in.
    private mutating func frameEnded(_ output: (Output) -> Void) {
        stage = .header
        switch opcode {
        case 0x0, 0x1:
            inMessage = !isFinal
            guard isFinal else { return }
            guard utf8.isComplete else {
                return fail((CloseCode.invalidPayload, "a text message that ends inside a UTF-8 character"), output)
            }
            output(.messageEnd)
        case 0x8:
            closeFrame(output)
        case 0x9:
            output(.ping(control))
        default:
            return
        }
    }

    /// A close frame: no payload, or a 2-byte code and a UTF-8 reason.
    private mutating func closeFrame(_ output: (Output) -> Void) {
        guard !control.isEmpty else { return output(.close(code: CloseCode.noStatus, reason: [])) }
        guard control.count >= 2 else { return fail((CloseCode.protocolError, "a close frame with a 1-byte payload"), output) }
        let code = UInt16(control[0]) << 8 | UInt16(control[1])
        let reason = Array(control[2...])
        var check = UTF8Validator()
        guard check.feed(reason), check.isComplete else {
            return fail((CloseCode.invalidPayload, "a close reason that is not UTF-8"), output)
        }
        guard Self.isValidCloseCode(code) else { return fail((CloseCode.protocolError, "close code \(code) may not be sent"), output) }
        output(.close(code: code, reason: reason))
    }

    /// RFC 6455 7.4: the codes an endpoint may put in a close frame.
    static func isValidCloseCode(_ code: UInt16) -> Bool {
        switch code {
        case 1000...1003, 1007...1011: return true
        case 3000...4999: return true
        default: return false
        }
    }

    private mutating func fail(_ failure: (UInt16, String), _ output: (Output) -> Void) {
        stage = .failed
        output(.fail(code: failure.0, reason: failure.1))
    }
}
