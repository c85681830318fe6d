/// The frames a WebSocket client sends (RFC 6455, section 5; issue 34), decoded as they
/// arrive, in whatever pieces the socket gives them: a pure state machine, no I/O.
///
/// In place, for speed: `decode` unmasks the text of a read where it lies and moves it to the
/// front of the same buffer over the frame headers it drops (the write position never passes
/// the read position), so a read's lines reach the framer without a copy. Each text message's
/// last line is ended with `\n` when the client left it off, in the room a dropped frame
/// header left (6 bytes at least), or by a `lineEnd` event when the final frame's header came
/// in an earlier read. Control frames are reported as events,
/// with how much text came before them: a ping (to answer with a pong of the same payload), a
/// close (with its code), a violation (`fail`), after which nothing more is decoded: an
/// unmasked frame, a reserved bit or opcode, a fragmented or over-long control frame, a
/// continuation with no message, a new message inside another, a binary message (1003), a
/// length with its top bit set, invalid UTF-8 in a text message (1007, checked across
/// fragment and read boundaries).
struct WebSocketFrameDecoder {
    /// A control frame or a violation, in its place among the text.
    enum Event: Equatable {
        /// A ping and its payload (at most 125 bytes).
        case ping([UInt8])
        /// A close frame: its status code (1005 when it carried none) and reason.
        case close(code: UInt16, reason: [UInt8])
        /// The client broke the protocol: close with `code` (RFC 6455, 7.4.1).
        case fail(code: UInt16, reason: String)
        /// A message's last line ends here, and the buffer had no room for its `\n` (the
        /// final frame's header came in an earlier read): hand one after the text before it.
        case lineEnd
    }

    /// The RFC's close codes this side sends.
    enum CloseCode {
        static let normal: UInt16 = 1000
        static let protocolError: UInt16 = 1002
        static let unsupportedData: UInt16 = 1003
        static let noStatus: UInt16 = 1005
        static let invalidPayload: UInt16 = 1007
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
    /// The mask as a little-endian word, rotated to where the next payload byte is.
    private var mask: UInt32 = 0
    private var remaining: UInt64 = 0
    /// A control frame's payload, gathered whole (at most 125 bytes).
    private var control: [UInt8] = []
    /// Whether a text message is open (its first frame came, its final one not yet).
    private var inMessage = false
    /// Whether the message's text so far ends with `\n` (or is empty).
    private var atLineStart = true
    private var utf8 = UTF8Validator()

    /// Whether a violation or a close frame ended the decoding.
    var hasEnded: Bool { stage == .failed }

    /// Decodes `buffer` in place: its messages' text, unmasked, ends up at its front.
    /// - Parameter event: each control frame or violation, with the count of text bytes at
    ///   the front that came before it.
    /// - Returns: how many text bytes are at the front of `buffer`.
    mutating func decode(_ buffer: UnsafeMutableRawBufferPointer, _ event: (_ textBefore: Int, Event) -> Void) -> Int {
        var read = 0
        var written = 0
        while read < buffer.count, stage != .failed {
            switch stage {
            case .header:
                // The usual case: the whole header in this buffer, read where it lies.
                if header.isEmpty, let needed = Self.headerSize(buffer, at: read), read + needed <= buffer.count {
                    let failure = headerComplete(UnsafeRawBufferPointer(rebasing: buffer[read..<(read + needed)]))
                    read += needed
                    if let failure {
                        fail(failure, written, event)
                    } else if remaining == 0 {
                        frameEnded(buffer, read: read, &written, event)
                    }
                    continue
                }
                header.append(buffer[read])
                read += 1
                let gathered = header
                if let failure = gathered.withUnsafeBytes({ headerComplete($0) }) {
                    fail(failure, written, event)
                } else if stage == .payload && remaining == 0 {
                    frameEnded(buffer, read: read, &written, event)
                }
            case .payload:
                let take = Int(min(remaining, UInt64(buffer.count - read)))
                payload(buffer, from: read, count: take, to: &written, event)
                read += take
                remaining -= UInt64(take)
                if remaining == 0, stage == .payload { frameEnded(buffer, read: read, &written, event) }
            case .failed:
                break
            }
        }
        return written
    }

    /// The size of the header starting at `at`, once its first two bytes are there.
    private static func headerSize(_ buffer: UnsafeMutableRawBufferPointer, at: Int) -> Int? {
        guard at + 2 <= buffer.count else { return nil }
        let length7 = buffer[at + 1] & 0x7F
        return 2 + (length7 == 126 ? 2 : length7 == 127 ? 8 : 0) + 4
    }

    /// Judges the header bytes gathered so far (`bytes`, from the frame's first byte): a
    /// failure as soon as one shows, nil while they are fine; once they are whole, the frame
    /// is set up and the payload stage begins.
    private mutating func headerComplete(_ bytes: UnsafeRawBufferPointer) -> (UInt16, String)? {
        guard bytes.count >= 2 else { return nil }
        let length7 = bytes[1] & 0x7F
        let needed = 2 + (length7 == 126 ? 2 : length7 == 127 ? 8 : 0) + 4
        if bytes[0] & 0x70 != 0 { return (CloseCode.protocolError, "a reserved bit is set (no extension was agreed)") }
        if bytes[1] & 0x80 == 0 { return (CloseCode.protocolError, "a client frame must be masked") }
        opcode = bytes[0] & 0x0F
        isFinal = bytes[0] & 0x80 != 0
        if let failure = checkOpcode(length7) { return failure }
        if length7 == 127 && bytes.count >= 3 && bytes[2] & 0x80 != 0 {
            return (CloseCode.protocolError, "a payload length with its top bit set")
        }
        guard bytes.count == needed else { return nil }
        var length = UInt64(length7)
        if length7 == 126 {
            length = UInt64(bytes[2]) << 8 | UInt64(bytes[3])
        } else if length7 == 127 {
            length = bytes[2..<10].reduce(0) { $0 << 8 | UInt64($1) }
        }
        let at = needed - 4
        mask = UInt32(bytes[at]) | UInt32(bytes[at + 1]) << 8 | UInt32(bytes[at + 2]) << 16 | UInt32(bytes[at + 3]) << 24
        remaining = length
        if !header.isEmpty { header.removeAll(keepingCapacity: true) }
        if !control.isEmpty { control.removeAll(keepingCapacity: true) }
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

    /// Unmasks `count` payload bytes at `from`: text moves to `written` (checked as UTF-8),
    /// a control frame's is kept aside.
    private mutating func payload(_ buffer: UnsafeMutableRawBufferPointer, from: Int, count: Int, to written: inout Int,
                                  _ event: (Int, Event) -> Void) {
        guard count > 0, let base = buffer.baseAddress else { return }
        if opcode >= 0x8 {
            unmask(base + from, count)
            control += UnsafeRawBufferPointer(start: base + from, count: count)
            return
        }
        inMessage = true
        // One pass: unmasked, moved to the front and looked at for non-ASCII bytes; only text
        // with some (or a character left open before) goes through the UTF-8 check.
        let ascii = unmaskMove(from: base + from, to: base + written, count)
        let text = UnsafeRawBufferPointer(start: base + written, count: count)
        if !(ascii && utf8.isComplete) {
            guard utf8.feed(text) else {
                return fail((CloseCode.invalidPayload, "a text message that is not UTF-8"), written, event)
            }
        }
        atLineStart = text[count - 1] == 10
        written += count
    }

    /// `unmask` that also moves the bytes down to `target` (at or before `source`: a block is
    /// loaded before the store that may overlap it) and says whether all were ASCII.
    private mutating func unmaskMove(from source: UnsafeMutableRawPointer, to target: UnsafeMutableRawPointer,
                                     _ count: Int) -> Bool {
        var at = 0
        var high: UInt64 = 0
        let wide = UInt64(mask) | UInt64(mask) << 32
        while at + 8 <= count {
            let word = UInt64(littleEndian: (source + at).loadUnaligned(as: UInt64.self)) ^ wide
            high |= word
            (target + at).storeBytes(of: word.littleEndian, toByteOffset: 0, as: UInt64.self)
            at += 8
        }
        var rotating = mask
        while at < count {
            let byte = (source + at).load(as: UInt8.self) ^ UInt8(truncatingIfNeeded: rotating)
            high |= UInt64(byte)
            (target + at).storeBytes(of: byte, as: UInt8.self)
            rotating = rotating >> 8 | rotating << 24
            at += 1
        }
        mask = rotating
        return high & 0x8080_8080_8080_8080 == 0
    }

    /// XORs `count` bytes with the mask, eight at a time, and turns the mask to where the
    /// next byte is.
    private mutating func unmask(_ start: UnsafeMutableRawPointer, _ count: Int) {
        var at = 0
        let wide = UInt64(mask) | UInt64(mask) << 32
        while at + 8 <= count {
            let word = UInt64(littleEndian: (start + at).loadUnaligned(as: UInt64.self))
            (start + at).storeBytes(of: (word ^ wide).littleEndian, toByteOffset: 0, as: UInt64.self)
            at += 8
        }
        if at + 4 <= count {
            let word = UInt32(littleEndian: (start + at).loadUnaligned(as: UInt32.self))
            (start + at).storeBytes(of: (word ^ mask).littleEndian, toByteOffset: 0, as: UInt32.self)
            at += 4
        }
        var rotating = mask
        while at < count {
            let byte = (start + at).load(as: UInt8.self)
            (start + at).storeBytes(of: byte ^ UInt8(truncatingIfNeeded: rotating), as: UInt8.self)
            rotating = rotating >> 8 | rotating << 24
            at += 1
        }
        mask = rotating
    }

    /// A frame's payload is all in (`read`: where decoding is in the buffer).
    private mutating func frameEnded(_ buffer: UnsafeMutableRawBufferPointer, read: Int, _ written: inout Int,
                                     _ event: (Int, Event) -> Void) {
        stage = .header
        switch opcode {
        case 0x0, 0x1:
            inMessage = !isFinal
            guard isFinal else { return }
            guard utf8.isComplete else {
                return fail((CloseCode.invalidPayload, "a text message that ends inside a UTF-8 character"), written, event)
            }
            if !atLineStart {
                atLineStart = true
                // Room where this read dropped a frame header (6 bytes at least each); none
                // when the final frame's header came in an earlier read.
                guard written < read else { return event(written, .lineEnd) }
                buffer[written] = 10
                written += 1
            }
        case 0x8:
            closeFrame(written, event)
            // Nothing after a close frame is read (RFC 6455, 5.5.1).
            stage = .failed
        case 0x9:
            event(written, .ping(control))
        default:
            return
        }
    }

    /// A close frame: no payload, or a 2-byte code and a UTF-8 reason.
    private mutating func closeFrame(_ written: Int, _ event: (Int, Event) -> Void) {
        guard !control.isEmpty else { return event(written, .close(code: CloseCode.noStatus, reason: [])) }
        guard control.count >= 2 else { return fail((CloseCode.protocolError, "a close frame with a 1-byte payload"), written, event) }
        let code = UInt16(control[0]) << 8 | UInt16(control[1])
        let reason = Array(control[2...])
        var check = UTF8Validator()
        let valid = reason.withUnsafeBytes { check.feed($0) }
        guard valid, check.isComplete else {
            return fail((CloseCode.invalidPayload, "a close reason that is not UTF-8"), written, event)
        }
        guard Self.isValidCloseCode(code) else {
            return fail((CloseCode.protocolError, "close code \(code) may not be sent"), written, event)
        }
        event(written, .close(code: code, reason: reason))
    }

    /// RFC 6455 7.4: the codes an endpoint may put in a close frame.
    static func isValidCloseCode(_ code: UInt16) -> Bool {
        switch code {
        case 1000...1003, 1007...1011: return true
        case 3000...4999: return true
        default: return false
        }
    }

    private mutating func fail(_ failure: (UInt16, String), _ written: Int, _ event: (Int, Event) -> Void) {
        stage = .failed
        event(written, .fail(code: failure.0, reason: failure.1))
    }
}
