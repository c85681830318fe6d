/// The frames the daemon sends a WebSocket client (RFC 6455, section 5.2): unmasked, final,
/// one text message per batch of whole lines, and the control frames (pong, close).
enum WebSocketFrameEncoder {
    /// The header of an unmasked final frame of `opcode` carrying `length` payload bytes,
    /// appended to `out` (2, 4 or 10 bytes).
    static func appendHeader(opcode: UInt8, length: Int, to out: inout [UInt8]) {
        out.append(0x80 | opcode)
        switch length {
        case ..<126:
            out.append(UInt8(length))
        case ..<65_536:
            out += [126, UInt8(length >> 8), UInt8(length & 0xFF)]
        default:
            out.append(127)
            for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8((UInt64(length) >> UInt64(shift)) & 0xFF)) }
        }
    }

    /// How many header bytes a frame of `length` payload bytes takes.
    static func headerSize(length: Int) -> Int {
        length < 126 ? 2 : length < 65_536 ? 4 : 10
    }

    /// A text message holding `payload` (whole protocol lines).
    static func text(_ payload: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(payload.count + headerSize(length: payload.count))
        appendHeader(opcode: 0x1, length: payload.count, to: &out)
        return out + payload
    }

    /// A pong answering a ping with `payload`.
    static func pong(_ payload: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        appendHeader(opcode: 0xA, length: payload.count, to: &out)
        return out + payload
    }

    /// A close frame with `code` and a reason (cut to fit the 125-byte control payload,
    /// on a UTF-8 boundary).
    static func close(code: UInt16, reason: String = "") -> [UInt8] {
        var text: [UInt8] = []
        for scalar in reason.unicodeScalars {
            let bytes = Array(String(scalar).utf8)
            guard text.count + bytes.count <= 123 else { break }
            text += bytes
        }
        var out: [UInt8] = []
        appendHeader(opcode: 0x8, length: 2 + text.count, to: &out)
        return out + [UInt8(code >> 8), UInt8(code & 0xFF)] + text
    }
}
