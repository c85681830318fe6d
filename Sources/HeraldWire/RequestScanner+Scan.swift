/// The scanner's state machine: one iterative pass over the line.
extension RequestScanner {
    /// Validates `input` as one JSON object, writing the spans of known top-level fields
    /// into `values`.
    ///
    /// This is the documented hot loop, so it is deliberately one function whose control flow
    /// *is* the state: the outer loop is "a value starts here", the inner loop is "a value just
    /// ended". That way the cursor, depth and current-field bookkeeping stay in registers and
    /// no state variable is dispatched on per token. Nesting is tracked with a depth counter
    /// plus `containerStack` (object or array per level) instead of recursion, so hostile
    /// nesting costs neither stack nor allocation. A top-level member's span is recorded when
    /// its value completes: immediately for scalars, at the matching close for containers.
    /// - Parameter input: the line.
    /// - Returns: the presence bitmask of the recorded fields.
    /// - Throws: `bad_json` describing the first problem found.
    func scanObject(_ input: JSONInput) throws(HeraldError) -> UInt64 {
        var i = JSONLexer.skipWhitespace(input, from: 0)
        guard i < input.count else { throw .syntax(at: i, "empty request") }
        guard input[i] == ASCII.openBrace else { throw Self.notAnObject(input, at: i) }
        let values = self.values
        let stack = containerStack
        let maxDepth = self.maxDepth
        var depth = 0
        var inObject = true
        var presence: UInt64 = 0
        var field = -1  // rawValue of the known field whose value is being scanned, else -1
        var containerStart = 0  // where the current top-level member's container value began
        var containerKind = JSONKind.object

        var keyFollows = false  // whether an object member (key and ':') starts at `i`
        var afterComma = false  // whether a ',' preceded it, so a '}' there is a trailing comma

        valueStarts: while true {
            if keyFollows {
                let (keyEnd, known) = try scanMemberKey(input, at: i, afterComma: afterComma, topLevel: depth == 1)
                if depth == 1 {
                    field = known
                    if known >= 0 {
                        let bit: UInt64 = 1 &<< UInt64(known)
                        guard presence & bit == 0 else { throw .duplicateKey(known) }
                        presence |= bit
                    }
                }
                i = JSONLexer.skipWhitespace(input, from: keyEnd)
                guard i < input.count, input[i] == ASCII.colon else {
                    throw .syntax(input, at: i, expected: "':' after object key")
                }
                i = JSONLexer.skipWhitespace(input, from: i &+ 1)
                keyFollows = false
            }
            // A value starts at `i` (whitespace already skipped).
            guard i < input.count else { throw .syntax(input, at: i, expected: "a value") }
            let start = i
            let byte = input[i]
            if byte == ASCII.openBrace || byte == ASCII.openBracket {
                depth &+= 1
                guard depth <= maxDepth else { throw .tooDeep(maxDepth) }
                inObject = byte == ASCII.openBrace
                stack[depth] = inObject
                if depth == 2 {
                    containerStart = i
                    containerKind = inObject ? .object : .array
                }
                i = JSONLexer.skipWhitespace(input, from: i &+ 1)
                let isEmpty = i < input.count && input[i] == (inObject ? ASCII.closeBrace : ASCII.closeBracket)
                if !isEmpty {
                    keyFollows = inObject
                    afterComma = false
                    continue valueStarts
                }
                // An empty container: the loop below consumes its closing bracket.
            } else {
                let kind: JSONKind
                var escaped = false
                switch byte {
                case ASCII.quote:
                    (i, escaped) = try JSONLexer.scanString(input, at: i)
                    kind = .string
                case ASCII.minus, ASCII.zero...ASCII.nine:
                    i = try JSONLexer.scanNumber(input, at: i)
                    kind = .number
                case ASCII.lowerT, ASCII.lowerF, ASCII.lowerN:
                    (kind, i) = try JSONLexer.scanLiteral(input, at: i)
                default:
                    throw .syntax(input, at: i, expected: "a value")
                }
                if depth == 1 && field >= 0 {
                    values[field] = ScannedValue(kind: kind, start: start, end: i, hasEscapes: escaped)
                }
            }

            while true {
                // A value just ended: a ',' or the current container's closing bracket follows.
                i = JSONLexer.skipWhitespace(input, from: i)
                guard i < input.count else {
                    throw .syntax(input, at: i, expected: inObject ? "',' or '}'" : "',' or ']'")
                }
                let next = input[i]
                if next == ASCII.comma {
                    i = JSONLexer.skipWhitespace(input, from: i &+ 1)
                    if !inObject && i < input.count && input[i] == ASCII.closeBracket {
                        throw .syntax(at: i, "trailing comma before ']'")
                    }
                    keyFollows = inObject
                    afterComma = true
                    continue valueStarts
                }
                guard next == (inObject ? ASCII.closeBrace : ASCII.closeBracket) else {
                    throw .syntax(input, at: i, expected: inObject ? "',' or '}' after object member" : "',' or ']' after array element")
                }
                i &+= 1
                depth &-= 1
                if depth == 0 {
                    i = JSONLexer.skipWhitespace(input, from: i)
                    guard i == input.count else {
                        throw .syntax(input, at: i, expected: "end of line after the request object")
                    }
                    return presence
                }
                inObject = stack[depth]
                if depth == 1 && field >= 0 {
                    values[field] = ScannedValue(kind: containerKind, start: containerStart, end: i)
                }
            }
        }
    }

    /// Scans an object member's key; at the top level, also resolves which known field
    /// (if any) the following value belongs to.
    /// - Parameters:
    ///   - input: the line.
    ///   - offset: where the key should start (whitespace already skipped).
    ///   - afterComma: whether a `,` precedes the key, so a `}` here is a trailing comma.
    ///   - topLevel: whether the key belongs to the top-level object (only those are matched).
    /// - Returns: the offset past the key's closing quote, and the key's field rawValue or -1.
    /// - Throws: `bad_json` for a missing or malformed key.
    // `@_transparent` for the same measured reason as `JSONLexer.scanString`.
    @_transparent
    private func scanMemberKey(
        _ input: JSONInput, at offset: Int, afterComma: Bool, topLevel: Bool
    ) throws(HeraldError) -> (end: Int, field: Int) {
        guard offset < input.count, input[offset] == ASCII.quote else {
            if afterComma && offset < input.count && input[offset] == ASCII.closeBrace {
                throw .syntax(at: offset, "trailing comma before '}'")
            }
            throw .syntax(input, at: offset, expected: afterComma ? "a string key" : "a string key or '}'")
        }
        let (keyEnd, keyEscaped) = try JSONLexer.scanString(input, at: offset)
        guard topLevel, let known = knownField(input, from: offset &+ 1, to: keyEnd &- 1, escaped: keyEscaped) else {
            return (keyEnd, -1)
        }
        return (keyEnd, known.rawValue)
    }

    /// Resolves a top-level key (contents between its quotes) to a known field.
    ///
    /// Escaped keys are rare, so they take a slower path that decodes into a small stack
    /// buffer; a key whose decoded form is longer than any known key cannot match.
    @inline(__always)
    private func knownField(_ input: JSONInput, from start: Int, to end: Int, escaped: Bool) -> RequestField? {
        guard escaped else {
            return keys.field(input.base + start, length: end &- start, available: input.count &- start)
        }
        return knownEscapedField(input, from: start, to: end)
    }

    /// The out-of-line slow path of `knownField` for keys holding escapes.
    @inline(never)
    private func knownEscapedField(_ input: JSONInput, from start: Int, to end: Int) -> RequestField? {
        let keys = self.keys
        let capacity = keys.longestKey
        return withUnsafeTemporaryAllocation(byteCount: capacity, alignment: 1) { buffer -> RequestField? in
            guard let base = buffer.baseAddress,
                  let length = JSONStringDecoder.decode(input, from: start, to: end, into: base, capacity: capacity)
            else { return nil }
            return keys.field(base, length: length, available: length)
        }
    }

    /// The error for a line whose first token is not `{`.
    ///
    /// A line starting like some other JSON value gets the protocol's "must be an object"
    /// message; anything else is reported as the syntax error it is.
    private static func notAnObject(_ input: JSONInput, at offset: Int) -> HeraldError {
        switch input[offset] {
        case ASCII.openBracket, ASCII.quote, ASCII.minus, ASCII.zero...ASCII.nine,
             ASCII.lowerT, ASCII.lowerF, ASCII.lowerN:
            return HeraldError(.badJSON, "request must be a JSON object")
        default:
            return .syntax(input, at: offset, expected: "'{'")
        }
    }
}
