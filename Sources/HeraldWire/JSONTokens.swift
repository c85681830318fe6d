/// The request scanner's JSON lexer for other modules: one token at a time over a byte buffer.
///
/// Why public: the client decodes event payloads straight from the frame bytes (issue 17,
/// "Fast typed decoding"), and its tokens must follow exactly the rules the daemon validated
/// them with (RFC 8259, strict UTF-8). Every function validates the token it reads and
/// returns nil instead of throwing when it is malformed: the caller turns that into its own
/// error. Offsets are relative to `bytes`; a token must start at `offset < bytes.count`.
public enum JSONTokens {
    /// Skips RFC 8259 whitespace from `offset`.
    /// - Returns: the offset of the first non-whitespace byte, or `bytes.count`.
    @inlinable
    public static func skipWhitespace(_ bytes: UnsafeRawBufferPointer, from offset: Int) -> Int {
        var i = offset
        while i < bytes.count {
            let byte = bytes[i]
            guard byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 else { break }
            i &+= 1
        }
        return i
    }

    /// Validates the string whose opening quote is at `offset`.
    /// - Returns: the offset past the closing quote and whether the contents hold an escape;
    ///   nil when malformed.
    public static func string(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> (end: Int, hasEscapes: Bool)? {
        guard let input = JSONInput(bytes), offset < input.count, input[offset] == ASCII.quote else { return nil }
        return try? JSONLexer.scanString(input, at: offset)
    }

    /// Decodes the contents of a validated string (between its quotes, escapes resolved).
    /// - Parameters:
    ///   - bytes: the buffer.
    ///   - start: the first content byte (past the opening quote).
    ///   - end: the closing quote.
    /// - Returns: the string.
    public static func decodeString(_ bytes: UnsafeRawBufferPointer, from start: Int, to end: Int) -> String {
        guard let input = JSONInput(bytes), start <= end, end <= input.count else { return "" }
        let capacity = end - start
        return String(unsafeUninitializedCapacity: max(1, capacity)) { buffer in
            guard let base = buffer.baseAddress else { return 0 }
            return JSONStringDecoder.decode(input, from: start, to: end, into: UnsafeMutableRawPointer(base), capacity: capacity) ?? 0
        }
    }

    /// Validates the number starting at `offset`.
    /// - Returns: the offset past it; nil when malformed (`01`, `1.`, `-`, …).
    public static func number(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> Int? {
        guard let input = JSONInput(bytes), offset < input.count else { return nil }
        return try? JSONLexer.scanNumber(input, at: offset)
    }

    /// Matches `true`, `false` or `null` at `offset`.
    /// - Returns: its kind and the offset past it; nil for anything else.
    public static func literal(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> (kind: JSONKind, end: Int)? {
        guard let input = JSONInput(bytes), offset < input.count else { return nil }
        let first = input[offset]
        guard first == ASCII.lowerT || first == ASCII.lowerF || first == ASCII.lowerN else { return nil }
        return try? JSONLexer.scanLiteral(input, at: offset)
    }

    /// Validates the whole value (object, array, string, number or literal) at `offset`,
    /// nested containers included, up to `maxDepth` levels.
    /// - Returns: its kind and the offset past it; nil when malformed or nested too deeply.
    public static func value(_ bytes: UnsafeRawBufferPointer, at offset: Int, maxDepth: Int = 512) -> (kind: JSONKind, end: Int)? {
        guard offset < bytes.count else { return nil }
        switch bytes[offset] {
        case UInt8(ascii: "\""):
            return string(bytes, at: offset).map { (.string, $0.end) }
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return number(bytes, at: offset).map { (.number, $0) }
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            guard maxDepth > 0 else { return nil }
            return container(bytes, at: offset, maxDepth: maxDepth - 1)
        default:
            return literal(bytes, at: offset)
        }
    }

    /// An object or array at `offset`: members or elements, each validated.
    private static func container(_ bytes: UnsafeRawBufferPointer, at offset: Int, maxDepth: Int) -> (kind: JSONKind, end: Int)? {
        let isObject = bytes[offset] == UInt8(ascii: "{")
        let close = isObject ? UInt8(ascii: "}") : UInt8(ascii: "]")
        var i = skipWhitespace(bytes, from: offset + 1)
        if i < bytes.count, bytes[i] == close { return (isObject ? .object : .array, i + 1) }
        while true {
            if isObject {
                guard i < bytes.count, let key = string(bytes, at: i) else { return nil }
                i = skipWhitespace(bytes, from: key.end)
                guard i < bytes.count, bytes[i] == UInt8(ascii: ":") else { return nil }
                i = skipWhitespace(bytes, from: i + 1)
            }
            guard let element = value(bytes, at: i, maxDepth: maxDepth) else { return nil }
            i = skipWhitespace(bytes, from: element.end)
            guard i < bytes.count else { return nil }
            if bytes[i] == close { return (isObject ? .object : .array, i + 1) }
            guard bytes[i] == UInt8(ascii: ",") else { return nil }
            i = skipWhitespace(bytes, from: i + 1)
        }
    }
}

extension JSONInput {
    /// A view of `bytes`; nil for an empty buffer (no base address to read from).
    init?(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress else { return nil }
        self.init(base: base, count: bytes.count)
    }
}
