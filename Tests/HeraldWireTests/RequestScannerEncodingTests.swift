import Testing
@testable import HeraldWire

/// One raw byte sequence placed inside a string, with the offset the error must name.
struct ScannerRawStringContent: Sendable, CustomTestStringConvertible {
    let name: String
    let content: [UInt8]
    var testDescription: String { name }
}

/// UTF-8 validity, control characters and `\u` surrogate handling inside strings.
@Suite struct RequestScannerEncodingTests {
    /// Content starts at byte 9 of `{"data":"…"}`, so errors for the first content byte name byte 9.
    static let invalidUTF8: [ScannerRawStringContent] = [
        ScannerRawStringContent(name: "overlong slash C0 AF", content: [0xC0, 0xAF]),
        ScannerRawStringContent(name: "overlong C1 BF", content: [0xC1, 0xBF]),
        ScannerRawStringContent(name: "overlong 3-byte E0 80 AF", content: [0xE0, 0x80, 0xAF]),
        ScannerRawStringContent(name: "overlong 4-byte F0 80 80 AF", content: [0xF0, 0x80, 0x80, 0xAF]),
        ScannerRawStringContent(name: "lone continuation 80", content: [0x80]),
        ScannerRawStringContent(name: "lone continuation BF", content: [0xBF]),
        ScannerRawStringContent(name: "truncated 2-byte", content: [0xC3]),
        ScannerRawStringContent(name: "truncated 3-byte", content: [0xE2, 0x82]),
        ScannerRawStringContent(name: "truncated 4-byte", content: [0xF0, 0x9F, 0x8E]),
        ScannerRawStringContent(name: "lead then ASCII", content: [0xC3, 0x41]),
        ScannerRawStringContent(name: "surrogate D800 encoded", content: [0xED, 0xA0, 0x80]),
        ScannerRawStringContent(name: "surrogate DFFF encoded", content: [0xED, 0xBF, 0xBF]),
        ScannerRawStringContent(name: "above 10FFFF F4 90", content: [0xF4, 0x90, 0x80, 0x80]),
        ScannerRawStringContent(name: "F5 lead", content: [0xF5, 0x80, 0x80, 0x80]),
        ScannerRawStringContent(name: "FE", content: [0xFE]),
        ScannerRawStringContent(name: "FF", content: [0xFF]),
    ]

    @Test(arguments: invalidUTF8)
    func invalidUTF8InStringsIsRejected(_ bad: ScannerRawStringContent) {
        #expect(ScanFixture.error(ScanFixture.dataString(bad.content)) == HeraldError(.badJSON, "invalid UTF-8 at byte 9"))
    }

    @Test func invalidUTF8ErrorNamesTheLeadByteAfterASCIIPrefix() {
        let line = ScanFixture.dataString(ScanFixture.bytes("abcdefghijklmnop") + [0xE2, 0x28, 0xA1])
        #expect(ScanFixture.error(line)?.message == "invalid UTF-8 at byte 25")
    }

    @Test func invalidUTF8InKeysIsRejected() {
        let line = ScanFixture.bytes(#"{"a"#) + [0xC0, 0x80] + ScanFixture.bytes(#"":1}"#)
        #expect(ScanFixture.error(line) == HeraldError(.badJSON, "invalid UTF-8 at byte 3"))
    }

    @Test(arguments: [[0xC2, 0x80], [0xDF, 0xBF], [0xE0, 0xA0, 0x80], [0xED, 0x9F, 0xBF], [0xEE, 0x80, 0x80],
                      [0xEF, 0xBF, 0xBF], [0xF0, 0x90, 0x80, 0x80], [0xF4, 0x8F, 0xBF, 0xBF]] as [[UInt8]])
    func boundaryUTF8SequencesAreAccepted(sequence: [UInt8]) throws {
        try ScanFixture.scan(ScanFixture.dataString(sequence)) { scanner throws in
            #expect(Array(try #require(scanner.raw(.data))).dropFirst().dropLast() == ArraySlice(sequence))
        }
    }

    @Test func nonASCIIOutsideStringsIsRejected() {
        let line = ScanFixture.bytes(#"{"data":1"#) + [0xC3, 0xA9] + ScanFixture.bytes("}")
        #expect(ScanFixture.error(line)?.message == "invalid JSON at byte 9: expected ',' or '}' after object member, found byte 0xC3")
    }

    @Test func rawNulInStringIsRejected() {
        let line = ScanFixture.dataString([0x61, 0x00, 0x62])
        #expect(ScanFixture.error(line) == HeraldError(.badJSON, "invalid JSON at byte 10: control character 0x00 in string must be escaped"))
    }

    @Test(arguments: Array(UInt8(0x00)...UInt8(0x1F)))
    func rawControlCharactersInStringsAreRejected(byte: UInt8) {
        // Twenty ASCII bytes first, so the word-at-a-time path is the one that finds it.
        let line = ScanFixture.dataString(Array(repeating: 0x78, count: 20) + [byte])
        #expect(ScanFixture.error(line) == HeraldError(
            .badJSON, "invalid JSON at byte 29: control character \(HeraldError.hex(byte)) in string must be escaped"))
    }

    @Test func deleteAndHighASCIIAreAllowedRaw() throws {
        try ScanFixture.scan(ScanFixture.dataString([0x7F, 0x7E, 0x20])) { scanner throws in
            #expect(scanner[.data]?.kind == .string)
        }
    }

    @Test(arguments: [
        (#"\uD800"#, "lone high surrogate"), (#"\uDBFF x"#, "lone high surrogate"),
        (#"\uD83C\u0041"#, "lone high surrogate"), (#"\uD83C\uD83C"#, "lone high surrogate"),
        (#"\uD83C\n"#, "lone high surrogate"),
        (#"\uDC00"#, "lone low surrogate"), (#"\uDFFF\uD800"#, "lone low surrogate"),
    ])
    func loneSurrogateEscapesAreRejected(escape: String, problem: String) {
        let error = ScanFixture.error(#"{"data":""# + escape + #""}"#)
        #expect(error == HeraldError(.badJSON, "invalid JSON at byte 9: \(problem) escape in string"))
    }

    @Test func surrogatePairEscapeIsAccepted() throws {
        try ScanFixture.scan(#"{"ch":"\uD83D\uDE00"}"#) { scanner throws in
            #expect(try scanner.string(.ch) == Array("😀".utf8))
        }
    }

    @Test func escapedControlCharactersAreAccepted() throws {
        try ScanFixture.scan(#"{"ch":"\u0000\u001f\u007F"}"#) { scanner throws in
            #expect(try scanner.string(.ch) == [0x00, 0x1F, 0x7F])
        }
    }

    @Test func quotesAndBackslashesAtEveryWordOffsetAreFound() throws {
        for prefix in 0..<17 {
            let text = String(repeating: "a", count: prefix) + #"\"b\\"#
            try ScanFixture.scan(#"{"ch":""# + text + #"","op":"x"}"#) { scanner throws in
                #expect(try scanner.string(.ch) == Array((String(repeating: "a", count: prefix) + "\"b\\").utf8))
                #expect(try scanner.string(.op) == Array("x".utf8))
            }
        }
    }

    @Test func utf8ValidationAgreesWithTheStandardLibrary() {
        // Random short byte strings (no quote, backslash or control bytes) inside a string:
        // the scanner must accept exactly those the stdlib's validating decoder accepts.
        var random = ScannerTestRandom(seed: 0x5EED)
        for _ in 0..<20_000 {
            let length = Int(random.next() % 6) + 1
            let content = (0..<length).map { _ -> UInt8 in
                let byte = random.next() & 1 == 0 ? UInt8(0x80 + random.next() % 0x80) : UInt8(truncatingIfNeeded: random.next())
                return byte < 0x20 || byte == 0x22 || byte == 0x5C ? 0x41 : byte
            }
            let accepted = ScanFixture.error(ScanFixture.dataString(content)) == nil
            let valid = String(validating: content, as: UTF8.self) != nil
            #expect(accepted == valid, "bytes \(content)")
        }
    }
}

/// A tiny deterministic PRNG so generated tests are reproducible.
struct ScannerTestRandom: RandomNumberGenerator {
    var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// The string scanner's vector steps (64 bytes, then 32; issue 16): a byte that needs a look is found
/// wherever it sits in a long string, in any quarter of a step and in the tail after the last
/// full step, and every byte value is classified as the byte-wise path would.
@Suite struct RequestScannerLongStringTests {
    /// A 100-byte string of `x` with `bytes` at `position`; content starts at byte 9.
    private func line(_ bytes: [UInt8], at position: Int) -> [UInt8] {
        var content = [UInt8](repeating: UInt8(ascii: "x"), count: 100)
        content.replaceSubrange(position..<(position + bytes.count), with: bytes)
        return ScanFixture.dataString(content)
    }

    @Test func aControlByteIsFoundAtEveryPosition() {
        for position in 0..<100 {
            #expect(ScanFixture.error(line([0x01], at: position))?.message.contains("byte \(9 + position)") == true,
                    "control byte at \(position)")
        }
    }

    @Test func invalidUTF8IsFoundAtEveryPosition() {
        for position in 0..<100 {
            #expect(ScanFixture.error(line([0xFF], at: position)) == HeraldError(.badJSON, "invalid UTF-8 at byte \(9 + position)"))
        }
    }

    @Test func escapesAndValidUTF8AtEveryPositionAreAccepted() throws {
        for position in 0..<98 {
            #expect(ScanFixture.error(line([UInt8(ascii: "\\"), UInt8(ascii: "n")], at: position)) == nil)
            #expect(ScanFixture.error(line([0xC3, 0xA9], at: position)) == nil)
        }
    }

    @Test func aQuoteAtAnyPositionEndsTheString() {
        for position in 0..<100 {
            // The string ends early; the rest of the x's are then not valid JSON.
            #expect(ScanFixture.error(line([UInt8(ascii: "\"")], at: position))?.message
                .contains("at byte \(9 + position + 1)") == true, "quote at \(position)")
        }
    }

    @Test func everyByteValueIsClassifiedLikeTheBytewisePath() {
        for value in 0...255 {
            let byte = UInt8(value)
            let error = ScanFixture.error(line([byte], at: 40))
            switch byte {
            case 0x00..<0x20: #expect(error?.message.contains("byte 49") == true, "0x\(String(value, radix: 16))")
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), 0x80...0xFF: #expect(error != nil, "0x\(String(value, radix: 16))")
            default: #expect(error == nil, "0x\(String(value, radix: 16))")
            }
        }
    }
}
