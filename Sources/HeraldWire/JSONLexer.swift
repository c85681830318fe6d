/// Token-level validation for the request scanner: whitespace, strings, numbers and literals.
///
/// Each function takes the offset where its token starts and returns the offset just past it,
/// so the scanner's state machine keeps the single cursor in a register. They validate only
/// (RFC 8259 plus strict UTF-8) and never decode: decoding happens lazily in the accessors,
/// and `data` is never decoded at all.
enum JSONLexer {
    /// Skips RFC 8259 whitespace from `offset`.
    /// - Returns: the offset of the first non-whitespace byte, or `input.count`.
    @inline(__always)
    static func skipWhitespace(_ input: JSONInput, from offset: Int) -> Int {
        var i = offset
        // Requests are usually compact, so one comparison settles the common case.
        while i < input.count && input[i] <= ASCII.space && ASCII.isWhitespace(input[i]) { i &+= 1 }
        return i
    }

    /// Validates a string whose opening quote is at `offset`.
    ///
    /// Why the word loop: request strings are overwhelmingly ASCII, so eight bytes are
    /// classified per step and the byte-wise path runs only for quotes, escapes, control
    /// bytes and non-ASCII bytes (and the last few bytes of the line).
    /// - Returns: the offset past the closing quote, and whether the contents hold an escape.
    /// - Throws: `bad_json` for unterminated strings, raw control bytes, bad escapes, lone
    ///   surrogate escapes and invalid UTF-8.
    // `@_transparent` rather than `@inline(__always)`: the optimizer declined the latter for
    // this typed-throws function, and inlining it cut ~20% of the instructions per request.
    @_transparent
    static func scanString(_ input: JSONInput, at offset: Int) throws(HeraldError) -> (end: Int, hasEscapes: Bool) {
        var i = offset &+ 1
        var hasEscapes = false
        while true {
            // Long strings (payloads) go 64 bytes per step as four 16-byte vectors, one branch
            // (issue 16: the word loop was 25% of the CPU at 16 KiB), then 32.
            while i &+ 64 <= input.count {
                let first = specialLanes(input.vector(at: i)) .| specialLanes(input.vector(at: i &+ 16))
                let second = specialLanes(input.vector(at: i &+ 32)) .| specialLanes(input.vector(at: i &+ 48))
                if anyLane(first .| second) { break }
                i &+= 64
            }
            while i &+ 32 <= input.count {
                if hasSpecialByte(input.vector(at: i), input.vector(at: i &+ 16)) { break }
                i &+= 32
            }
            while i &+ 8 <= input.count {
                let special = specialBytes(input.word(at: i))
                if special == 0 { i &+= 8; continue }
                i &+= special.trailingZeroBitCount &>> 3
                break
            }
            guard i < input.count else { throw .syntax(at: offset, "unterminated string") }
            let byte = input[i]
            if byte == ASCII.quote { return (i &+ 1, hasEscapes) }
            if byte == ASCII.backslash {
                i = try scanEscape(input, at: i)
                hasEscapes = true
            } else if byte >= 0x80 {
                i = try scanUTF8Sequence(input, at: i)
            } else if byte < 0x20 {
                throw .controlCharacter(byte, at: i)
            } else {
                i &+= 1
            }
        }
    }

    /// Whether any of the 32 bytes in `a` and `b` is `"`, `\`, below 0x20 or 0x80 and above.
    ///
    /// Written so the optimizer keeps it in vector registers: lane compares, then the masks
    /// read back as two words (the generic `any(_:)` reduces lane by lane, out of line).
    @inline(__always)
    static func hasSpecialByte(_ a: SIMD16<UInt8>, _ b: SIMD16<UInt8>) -> Bool {
        anyLane(specialLanes(a) .| specialLanes(b))
    }

    /// Whether any lane of `mask` is set, read back as two words.
    @inline(__always)
    static func anyLane(_ mask: SIMDMask<SIMD16<Int8>>) -> Bool {
        let words = unsafeBitCast(mask, to: SIMD2<UInt64>.self)
        return (words[0] | words[1]) != 0
    }

    /// The lanes of `v` the string scanner must look at byte by byte.
    ///
    /// Seen as signed bytes, 0x80 and above are negative, so one signed compare (`< 0x20`)
    /// flags them together with the control bytes: three compares a vector (SSE2 has no
    /// unsigned one, which took a subtract, a bias and an invert more; 1→1 16 KiB `perf`).
    @inline(__always)
    static func specialLanes(_ v: SIMD16<UInt8>) -> SIMDMask<SIMD16<Int8>> {
        let signed = unsafeBitCast(v, to: SIMD16<Int8>.self)
        return (v .== SIMD16<UInt8>(repeating: ASCII.quote)) .| (v .== SIMD16<UInt8>(repeating: ASCII.backslash))
            .| (signed .< SIMD16<Int8>(repeating: 0x20))
    }

    /// Flags (high bit of each byte lane) the bytes of `word` that the string scanner must
    /// look at individually: `"`, `\`, bytes below 0x20 and bytes of 0x80 and above.
    ///
    /// The classic SWAR zero-byte tests can flag lanes *above* a real hit (borrow
    /// propagation), but never below one, so the lowest set lane is always exact.
    @inline(__always)
    static func specialBytes(_ word: UInt64) -> UInt64 {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        let quotes = word ^ (ones &* UInt64(ASCII.quote))
        let backslashes = word ^ (ones &* UInt64(ASCII.backslash))
        let quoteHits = (quotes &- ones) & ~quotes
        let backslashHits = (backslashes &- ones) & ~backslashes
        let controlHits = (word &- ones &* 0x20) & ~word
        return (quoteHits | backslashHits | controlHits | word) & highs
    }

    /// Validates one backslash escape at `offset` (the backslash), pairing `\uD8xx\uDCxx`.
    /// - Returns: the offset past the escape (past both halves of a surrogate pair).
    /// - Throws: `bad_json` for unknown escapes, short or non-hex `\u` escapes and lone surrogates.
    static func scanEscape(_ input: JSONInput, at offset: Int) throws(HeraldError) -> Int {
        guard offset &+ 1 < input.count else { throw .syntax(at: offset, "unterminated escape") }
        switch input[offset &+ 1] {
        case ASCII.quote, ASCII.backslash, ASCII.slash, 0x62, 0x66, 0x6E, 0x72, 0x74:  // " \ / b f n r t
            return offset &+ 2
        case ASCII.lowerU:
            let unit = try hexQuad(input, at: offset)
            if unit >= 0xDC00 && unit <= 0xDFFF {
                throw .syntax(at: offset, "lone low surrogate escape in string")
            }
            guard unit >= 0xD800 && unit <= 0xDBFF else { return offset &+ 6 }
            let low = offset &+ 6
            guard low &+ 1 < input.count, input[low] == ASCII.backslash, input[low &+ 1] == ASCII.lowerU else {
                throw .syntax(at: offset, "lone high surrogate escape in string")
            }
            let next = try hexQuad(input, at: low)
            guard next >= 0xDC00 && next <= 0xDFFF else {
                throw .syntax(at: offset, "lone high surrogate escape in string")
            }
            return low &+ 6
        default:
            throw invalidEscape(input, at: offset)
        }
    }

    /// The error for a backslash at `offset` followed by a byte that starts no escape.
    @inline(never)
    private static func invalidEscape(_ input: JSONInput, at offset: Int) -> HeraldError {
        let next = input[offset &+ 1]
        guard next > 0x20 && next < 0x7F else {
            return .syntax(at: offset, "invalid escape in string: backslash followed by byte \(HeraldError.hex(next))")
        }
        return .syntax(at: offset, "invalid escape '\\\(Character(Unicode.Scalar(next)))' in string")
    }

    /// Reads the four hex digits of the `\u` escape whose backslash is at `offset`.
    /// - Throws: `bad_json` unless four hex digits follow `\u`.
    @inline(__always)
    static func hexQuad(_ input: JSONInput, at offset: Int) throws(HeraldError) -> UInt32 {
        guard offset &+ 6 <= input.count else { throw .syntax(at: offset, "\\u escape needs four hex digits") }
        var value: UInt32 = 0
        for i in (offset &+ 2)..<(offset &+ 6) {
            guard let digit = ASCII.hexValue(input[i]) else {
                throw .syntax(at: offset, "\\u escape needs four hex digits")
            }
            value = value &<< 4 | digit
        }
        return value
    }

    /// Validates the multi-byte UTF-8 sequence whose lead byte is at `offset` (Unicode 15,
    /// table 3-7): rejects stray continuation bytes, overlong forms, UTF-16 surrogates
    /// encoded in UTF-8, scalars above U+10FFFF and sequences cut short by the line's end.
    /// - Returns: the offset past the sequence.
    /// - Throws: `bad_json` "invalid UTF-8 at byte N" naming the lead byte.
    @inline(__always)
    static func scanUTF8Sequence(_ input: JSONInput, at offset: Int) throws(HeraldError) -> Int {
        let lead = input[offset]
        let length: Int
        var secondLow: UInt8 = 0x80
        var secondHigh: UInt8 = 0xBF
        switch lead {
        case 0xC2...0xDF: length = 2
        case 0xE0: length = 3; secondLow = 0xA0
        case 0xE1...0xEC, 0xEE...0xEF: length = 3
        case 0xED: length = 3; secondHigh = 0x9F
        case 0xF0: length = 4; secondLow = 0x90
        case 0xF1...0xF3: length = 4
        case 0xF4: length = 4; secondHigh = 0x8F
        default: throw .invalidUTF8(at: offset)
        }
        guard offset &+ length <= input.count else { throw .invalidUTF8(at: offset) }
        let second = input[offset &+ 1]
        guard second >= secondLow && second <= secondHigh else { throw .invalidUTF8(at: offset) }
        var i = offset &+ 2
        while i < offset &+ length {
            guard input[i] & 0xC0 == 0x80 else { throw .invalidUTF8(at: offset) }
            i &+= 1
        }
        return i
    }

    /// Validates a number starting at `offset` against RFC 8259's grammar
    /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`; any length is accepted here
    /// (range is the accessor's concern, and `data` may carry big numbers verbatim).
    /// - Returns: the offset past the number.
    /// - Throws: `bad_json` for a lone `-`, leading zeros, `1.`, `1e` and the like.
    @inline(__always)
    static func scanNumber(_ input: JSONInput, at offset: Int) throws(HeraldError) -> Int {
        var i = offset
        if input[i] == ASCII.minus { i &+= 1 }
        guard i < input.count, ASCII.isDigit(input[i]) else {
            throw .syntax(input, at: i, expected: "a digit in number")
        }
        if input[i] == ASCII.zero {
            i &+= 1
            if i < input.count && ASCII.isDigit(input[i]) {
                throw .syntax(at: offset, "leading zeros are not allowed in numbers")
            }
        } else {
            i = skipDigits(input, from: i)
        }
        if i < input.count && input[i] == ASCII.dot {
            i &+= 1
            guard i < input.count, ASCII.isDigit(input[i]) else {
                throw .syntax(input, at: i, expected: "a digit after '.' in number")
            }
            i = skipDigits(input, from: i)
        }
        if i < input.count && (input[i] == ASCII.lowerE || input[i] == ASCII.upperE) {
            i &+= 1
            if i < input.count && (input[i] == ASCII.plus || input[i] == ASCII.minus) { i &+= 1 }
            guard i < input.count, ASCII.isDigit(input[i]) else {
                throw .syntax(input, at: i, expected: "a digit in exponent")
            }
            i = skipDigits(input, from: i)
        }
        return i
    }

    /// Skips a run of ASCII digits from `offset`.
    @inline(__always)
    static func skipDigits(_ input: JSONInput, from offset: Int) -> Int {
        var i = offset
        while i < input.count && ASCII.isDigit(input[i]) { i &+= 1 }
        return i
    }

    /// Matches the literal `true`, `false` or `null` (chosen by its first byte) at `offset`.
    /// - Returns: the literal's kind and the offset past it.
    /// - Throws: `bad_json` when the bytes are not exactly that literal (e.g. `nul`, `tru`).
    @inline(__always)
    static func scanLiteral(_ input: JSONInput, at offset: Int) throws(HeraldError) -> (kind: JSONKind, end: Int) {
        let kind: JSONKind
        let word: UInt64
        let length: Int
        switch input[offset] {
        case ASCII.lowerT: kind = .true; word = 0x6575_7274; length = 4  // "true"
        case ASCII.lowerF: kind = .false; word = 0x65_736C_6166; length = 5  // "false"
        default: kind = .null; word = 0x6C6C_756E; length = 4  // "null"
        }
        var actual: UInt64 = 0
        if offset &+ length <= input.count {
            for i in 0..<length { actual |= UInt64(input[offset &+ i]) &<< (8 &* UInt64(i)) }
        }
        guard actual == word else {
            throw .invalidLiteral(kind, at: offset)
        }
        return (kind, offset &+ length)
    }
}
