/// Builders for the `bad_json` and `bad_field` messages the scanner and its accessors throw.
///
/// They live apart from the scanner so the hot loop only calls a cold, never-inlined function
/// on failure; message formatting (and its `String` work) never touches the success path.
extension HeraldError {
    /// A syntax error at a byte offset: "invalid JSON at byte 17: expected ':' after object key, found '}'".
    @inline(never)
    static func syntax(_ input: JSONInput, at offset: Int, expected: String) -> HeraldError {
        HeraldError(.badJSON, "invalid JSON at byte \(offset): expected \(expected), found \(describeByte(input, at: offset))")
    }

    /// A syntax error whose wording needs no "found" suffix: "invalid JSON at byte 3: leading zeros are not allowed".
    @inline(never)
    static func syntax(at offset: Int, _ problem: String) -> HeraldError {
        HeraldError(.badJSON, "invalid JSON at byte \(offset): \(problem)")
    }

    /// A malformed UTF-8 sequence starting at `offset`.
    @inline(never)
    static func invalidUTF8(at offset: Int) -> HeraldError {
        HeraldError(.badJSON, "invalid UTF-8 at byte \(offset)")
    }

    /// A raw control byte inside a string, which JSON requires to be escaped.
    @inline(never)
    static func controlCharacter(_ byte: UInt8, at offset: Int) -> HeraldError {
        .syntax(at: offset, "control character \(hex(byte)) in string must be escaped")
    }

    /// A `t`, `f` or `n` that does not start `true`, `false` or `null`.
    @inline(never)
    static func invalidLiteral(_ kind: JSONKind, at offset: Int) -> HeraldError {
        .syntax(at: offset, "invalid literal, expected '\(kind == .null ? "null" : String(kind == .true))'")
    }

    /// A container opened beyond the configured nesting limit.
    @inline(never)
    static func tooDeep(_ maxDepth: Int) -> HeraldError {
        HeraldError(.badJSON, "nesting deeper than \(maxDepth)")
    }

    /// A known request field given twice; ambiguous, so rejected rather than last-wins.
    @inline(never)
    static func duplicateKey(_ fieldIndex: Int) -> HeraldError {
        let key = RequestField(rawValue: fieldIndex)?.key ?? "?"
        return HeraldError(.badJSON, "duplicate key \"\(key)\"")
    }

    /// A field whose JSON type is not the one its accessor reads.
    @inline(never)
    static func wrongType(_ field: RequestField, expected: String, got kind: JSONKind) -> HeraldError {
        HeraldError(.badField, "field '\(field.key)' must be \(expected), got \(kind.name)")
    }

    /// A human description of the byte at `offset` (or of the line's end) for "found …" suffixes.
    ///
    /// Printable ASCII is quoted as is; anything else is shown in hex so a message never
    /// carries raw control or non-UTF-8 bytes back to the client.
    static func describeByte(_ input: JSONInput, at offset: Int) -> String {
        guard offset < input.count else { return "end of line" }
        let byte = input[offset]
        if byte > 0x20 && byte < 0x7F {
            return "'\(Character(Unicode.Scalar(byte)))'"
        }
        return "byte \(hex(byte))"
    }

    /// `0x0A`-style spelling of a byte, built without Foundation.
    static func hex(_ byte: UInt8) -> String {
        let digits = Array("0123456789ABCDEF".utf8)
        return String(decoding: [0x30, 0x78, digits[Int(byte >> 4)], digits[Int(byte & 0xF)]], as: UTF8.self)
    }
}
