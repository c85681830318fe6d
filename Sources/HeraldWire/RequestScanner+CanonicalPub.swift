/// The fast path for the canonical `pub` line, tried before the general state machine.
///
/// Why: publishing is the hot request, and clients (the Swift client, `herald-bench`, the
/// examples) all write it the same way: `{"op":"pub","ch":"NAME","data":VALUE}`, optionally
/// followed by `,"rid":SCALAR` before the closing brace. For that exact shape the key spellings
/// are known in advance, so they are matched as a byte prefix instead of being scanned and
/// looked up one by one, and the `op` needs no lookup at all. The values are validated by the
/// same lexer functions the general scanner uses and recorded as the same spans, so the rest
/// of the broker cannot tell which path read the line.
///
/// Anything that is not exactly canonical (other key order, whitespace between tokens, extra
/// or duplicate keys, a channel name with an escape, a control or non-ASCII byte, `data` that
/// is an object or array, a `rid` that is not a scalar, any malformed byte) makes the fast path
/// give up without a verdict, and the general scanner reads the line from the start, so every
/// error is found and worded exactly as before.
extension RequestScanner {
    /// `{"op":"p` as a little-endian word (bytes 0–7 of a canonical pub line).
    static let canonicalPubWord0: UInt64 = 0x7022_3A22_706F_227B
    /// `ub","ch"` as a little-endian word (bytes 8–15).
    static let canonicalPubWord1: UInt64 = 0x2268_6322_2C22_6275
    /// `","data"` as a little-endian word: the channel's closing quote and the `data` key.
    static let canonicalDataKeyWord: UInt64 = 0x2261_7461_6422_2C22
    /// `,"rid":` as a little-endian word in the low seven bytes.
    static let canonicalRidKeyWord: UInt64 = 0x3A_2264_6972_222C
    /// Where the channel name's contents start: just past `{"op":"pub","ch":"`.
    static let canonicalChannelStart = 18

    /// Records the fields of `input` when it is exactly a canonical `pub` line.
    ///
    /// On success `values` holds the spans the general scanner would have recorded for `op`,
    /// `ch`, `data` and (when present) `rid`. On nil nothing about the line is known: some
    /// entries of `values` may have been overwritten, which is harmless because `presence`
    /// decides which entries count and the general scan sets it afresh.
    /// - Parameter input: the line.
    /// - Returns: the presence bitmask of the recorded fields, or nil when the line is not canonical.
    @inline(__always)
    func scanCanonicalPub(_ input: JSONInput) -> UInt64? {
        let channelStart = Self.canonicalChannelStart
        // The shortest canonical line is `{"op":"pub","ch":"","data":0}`: 29 bytes.
        guard input.count >= channelStart &+ 11,
              input.word(at: 0) == Self.canonicalPubWord0,
              input.word(at: 8) == Self.canonicalPubWord1,
              input[16] == ASCII.colon, input[17] == ASCII.quote
        else { return nil }

        // The channel name: printable ASCII only, so it needs neither escape handling nor
        // UTF-8 validation; anything else is left to the general scanner. Eight bytes per
        // step: the lowest byte `specialBytes` flags is exact, and only a quote may end the
        // name (a byte at a time this loop was 65 instructions for a 10-byte name).
        var i = channelStart
        while i &+ 8 <= input.count {
            let special = JSONLexer.specialBytes(input.word(at: i))
            if special == 0 { i &+= 8; continue }
            i &+= special.trailingZeroBitCount &>> 3
            break
        }
        while i < input.count {
            let byte = input[i]
            if byte == ASCII.quote { break }
            guard byte >= 0x20, byte < 0x80, byte != ASCII.backslash else { return nil }
            i &+= 1
        }
        let channelEnd = i &+ 1  // past the closing quote
        guard i &+ 10 <= input.count,
              input.word(at: i) == Self.canonicalDataKeyWord,
              input[i &+ 8] == ASCII.colon
        else { return nil }

        let dataStart = i &+ 9
        guard let data = Self.canonicalScalar(input, at: dataStart) else { return nil }
        i = data.end
        guard i < input.count else { return nil }

        var presence: UInt64 = Self.canonicalPubPresence
        if input[i] != ASCII.closeBrace {
            // `,"rid":` then a scalar; seven key bytes plus at least one value byte.
            guard i &+ 8 <= input.count,
                  input.word(at: i) & 0x00FF_FFFF_FFFF_FFFF == Self.canonicalRidKeyWord,
                  let rid = Self.canonicalScalar(input, at: i &+ 7)
            else { return nil }
            values[RequestField.rid.rawValue] = rid
            presence |= 1 &<< UInt64(RequestField.rid.rawValue)
            i = rid.end
            guard i < input.count, input[i] == ASCII.closeBrace else { return nil }
        }
        guard JSONLexer.skipWhitespace(input, from: i &+ 1) == input.count else { return nil }

        values[RequestField.op.rawValue] = ScannedValue(kind: .string, start: 6, end: 11)
        values[RequestField.ch.rawValue] = ScannedValue(kind: .string, start: channelStart &- 1, end: channelEnd)
        values[RequestField.data.rawValue] = data
        return presence
    }

    /// The presence bits of `op`, `ch` and `data`.
    @inline(__always)
    static var canonicalPubPresence: UInt64 {
        1 &<< UInt64(RequestField.op.rawValue) | 1 &<< UInt64(RequestField.ch.rawValue)
            | 1 &<< UInt64(RequestField.data.rawValue)
    }

    /// Validates one scalar value (string, number, `true`, `false`, `null`) starting exactly at
    /// `offset`, with the general scanner's lexer functions.
    /// - Returns: its span as the general scanner records it, or nil for a container, a
    ///   malformed scalar or the end of the line (the general scanner reports those).
    @inline(__always)
    static func canonicalScalar(_ input: JSONInput, at offset: Int) -> ScannedValue? {
        guard offset < input.count else { return nil }
        do throws(HeraldError) {
            switch input[offset] {
            case ASCII.quote:
                let (end, escaped) = try JSONLexer.scanString(input, at: offset)
                return ScannedValue(kind: .string, start: offset, end: end, hasEscapes: escaped)
            case ASCII.minus, ASCII.zero...ASCII.nine:
                let end = try JSONLexer.scanNumber(input, at: offset)
                return ScannedValue(kind: .number, start: offset, end: end)
            case ASCII.lowerT, ASCII.lowerF, ASCII.lowerN:
                let (kind, end) = try JSONLexer.scanLiteral(input, at: offset)
                return ScannedValue(kind: kind, start: offset, end: end)
            default:
                return nil
            }
        } catch {
            return nil
        }
    }
}
