import Testing
@testable import HeraldWire

/// One malformed line and the exact `bad_json` message it must produce.
struct ScannerBadLine: Sendable, CustomTestStringConvertible {
    let line: [UInt8]
    let message: String
    var testDescription: String { String(decoding: line, as: UTF8.self) }

    init(_ line: String, _ message: String) {
        self.line = Array(line.utf8)
        self.message = message
    }

    init(bytes: [UInt8], _ message: String) {
        self.line = bytes
        self.message = message
    }
}

/// Broken JSON: every rejection is `bad_json` with a message that names the byte and the problem.
@Suite struct RequestScannerSyntaxTests {
    static let structure: [ScannerBadLine] = [
        ScannerBadLine("", "invalid JSON at byte 0: empty request"),
        ScannerBadLine(" \t\r\n", "invalid JSON at byte 4: empty request"),
        ScannerBadLine("{", "invalid JSON at byte 1: expected a string key or '}', found end of line"),
        ScannerBadLine(#"{"op""#, "invalid JSON at byte 5: expected ':' after object key, found end of line"),
        ScannerBadLine(#"{"op":"pub""#, "invalid JSON at byte 11: expected ',' or '}', found end of line"),
        ScannerBadLine(#"{"data":["#, "invalid JSON at byte 9: expected a value, found end of line"),
        ScannerBadLine(#"{"op"#, "invalid JSON at byte 1: unterminated string"),
        ScannerBadLine(#"{"op":"pub}"#, "invalid JSON at byte 6: unterminated string"),
        ScannerBadLine(#"{"op" "pub"}"#, "invalid JSON at byte 6: expected ':' after object key, found '\"'"),
        ScannerBadLine(#"{"data":{"a" 1}}"#, "invalid JSON at byte 13: expected ':' after object key, found '1'"),
        ScannerBadLine(#"{"op":"pub" "ch":"x"}"#, "invalid JSON at byte 12: expected ',' or '}' after object member, found '\"'"),
        ScannerBadLine(#"{"data":[1 2]}"#, "invalid JSON at byte 11: expected ',' or ']' after array element, found '2'"),
        ScannerBadLine(#"{"op":"pub"]"#, "invalid JSON at byte 11: expected ',' or '}' after object member, found ']'"),
        ScannerBadLine(#"{"data":[1}"#, "invalid JSON at byte 10: expected ',' or ']' after array element, found '}'"),
        ScannerBadLine(#"{"op":"pub",}"#, "invalid JSON at byte 12: trailing comma before '}'"),
        ScannerBadLine(#"{"data":[1,2,]}"#, "invalid JSON at byte 13: trailing comma before ']'"),
        ScannerBadLine(#"{"a":1,,"b":2}"#, "invalid JSON at byte 7: expected a string key, found ','"),
        ScannerBadLine("{,}", "invalid JSON at byte 1: expected a string key or '}', found ','"),
        ScannerBadLine(#"{"data":[,1]}"#, "invalid JSON at byte 9: expected a value, found ','"),
        ScannerBadLine(#"{"op":}"#, "invalid JSON at byte 6: expected a value, found '}'"),
        ScannerBadLine(#"{"op":"pub"} x"#, "invalid JSON at byte 13: expected end of line after the request object, found 'x'"),
        ScannerBadLine(#"{"op":"pub"}{"op":"pub"}"#, "invalid JSON at byte 12: expected end of line after the request object, found '{'"),
        ScannerBadLine(#"{"op":"pub"}}"#, "invalid JSON at byte 12: expected end of line after the request object, found '}'"),
        ScannerBadLine(#"{"op":"pub"} // note"#, "invalid JSON at byte 13: expected end of line after the request object, found '/'"),
        ScannerBadLine(#"{/* c */"op":"pub"}"#, "invalid JSON at byte 1: expected a string key or '}', found '/'"),
        ScannerBadLine(#"{"op":"pub", # c"#, "invalid JSON at byte 13: expected a string key, found '#'"),
        ScannerBadLine("{'op':'pub'}", "invalid JSON at byte 1: expected a string key or '}', found '''"),
        ScannerBadLine(#"{"op":'pub'}"#, "invalid JSON at byte 6: expected a value, found '''"),
        ScannerBadLine("{op:1}", "invalid JSON at byte 1: expected a string key or '}', found 'o'"),
    ]

    static let values: [ScannerBadLine] = [
        ScannerBadLine(#"{"data":NaN}"#, "invalid JSON at byte 8: expected a value, found 'N'"),
        ScannerBadLine(#"{"data":Infinity}"#, "invalid JSON at byte 8: expected a value, found 'I'"),
        ScannerBadLine(#"{"data":-Infinity}"#, "invalid JSON at byte 9: expected a digit in number, found 'I'"),
        ScannerBadLine(#"{"data":01}"#, "invalid JSON at byte 8: leading zeros are not allowed in numbers"),
        ScannerBadLine(#"{"data":00}"#, "invalid JSON at byte 8: leading zeros are not allowed in numbers"),
        ScannerBadLine(#"{"data":-01}"#, "invalid JSON at byte 8: leading zeros are not allowed in numbers"),
        ScannerBadLine(#"{"data":-}"#, "invalid JSON at byte 9: expected a digit in number, found '}'"),
        ScannerBadLine(#"{"data":--1}"#, "invalid JSON at byte 9: expected a digit in number, found '-'"),
        ScannerBadLine(#"{"data":+1}"#, "invalid JSON at byte 8: expected a value, found '+'"),
        ScannerBadLine(#"{"data":1.}"#, "invalid JSON at byte 10: expected a digit after '.' in number, found '}'"),
        ScannerBadLine(#"{"data":.5}"#, "invalid JSON at byte 8: expected a value, found '.'"),
        ScannerBadLine(#"{"data":1e}"#, "invalid JSON at byte 10: expected a digit in exponent, found '}'"),
        ScannerBadLine(#"{"data":1e+}"#, "invalid JSON at byte 11: expected a digit in exponent, found '}'"),
        ScannerBadLine(#"{"data":1.5.3}"#, "invalid JSON at byte 11: expected ',' or '}' after object member, found '.'"),
        ScannerBadLine(#"{"data":0x10}"#, "invalid JSON at byte 9: expected ',' or '}' after object member, found 'x'"),
        ScannerBadLine(#"{"data":hello}"#, "invalid JSON at byte 8: expected a value, found 'h'"),
        ScannerBadLine(#"{"data":True}"#, "invalid JSON at byte 8: expected a value, found 'T'"),
        ScannerBadLine(#"{"data":tru}"#, "invalid JSON at byte 8: invalid literal, expected 'true'"),
        ScannerBadLine(#"{"data":fals"#, "invalid JSON at byte 8: invalid literal, expected 'false'"),
        ScannerBadLine(#"{"data":nul"#, "invalid JSON at byte 8: invalid literal, expected 'null'"),
        ScannerBadLine(#"{"data":nulL}"#, "invalid JSON at byte 8: invalid literal, expected 'null'"),
        ScannerBadLine(#"{"data":truex}"#, "invalid JSON at byte 12: expected ',' or '}' after object member, found 'x'"),
        ScannerBadLine(#"{"data":"\x"}"#, #"invalid JSON at byte 9: invalid escape '\x' in string"#),
        ScannerBadLine(#"{"data":"\U0041"}"#, #"invalid JSON at byte 9: invalid escape '\U' in string"#),
        ScannerBadLine(#"{"data":"\u12"}"#, #"invalid JSON at byte 9: \u escape needs four hex digits"#),
        ScannerBadLine(#"{"data":"\u12G4"}"#, #"invalid JSON at byte 9: \u escape needs four hex digits"#),
        ScannerBadLine(#"{"data":"\uD83C\u12"}"#, #"invalid JSON at byte 15: \u escape needs four hex digits"#),
        ScannerBadLine(#"{"data":"abc\"#, "invalid JSON at byte 12: unterminated escape"),
        ScannerBadLine(#"{"data":"\"#, "invalid JSON at byte 9: unterminated escape"),
    ]

    static let notObjects: [ScannerBadLine] = [
        ScannerBadLine("[1,2]", "request must be a JSON object"),
        ScannerBadLine(#""op""#, "request must be a JSON object"),
        ScannerBadLine("  42", "request must be a JSON object"),
        ScannerBadLine("-1", "request must be a JSON object"),
        ScannerBadLine("null", "request must be a JSON object"),
        ScannerBadLine("true", "request must be a JSON object"),
        ScannerBadLine("hello", "invalid JSON at byte 0: expected '{', found 'h'"),
        ScannerBadLine("\u{FEFF}{}", "invalid JSON at byte 0: expected '{', found byte 0xEF"),
    ]

    @Test(arguments: structure)
    func brokenStructureIsRejected(_ bad: ScannerBadLine) {
        #expect(ScanFixture.error(bad.line) == HeraldError(.badJSON, bad.message))
    }

    @Test(arguments: values)
    func malformedValuesAreRejected(_ bad: ScannerBadLine) {
        #expect(ScanFixture.error(bad.line) == HeraldError(.badJSON, bad.message))
    }

    @Test(arguments: notObjects)
    func topLevelNonObjectsAreRejected(_ bad: ScannerBadLine) {
        #expect(ScanFixture.error(bad.line) == HeraldError(.badJSON, bad.message))
    }

    @Test func nulOutsideStringsIsRejectedAndShownInHex() {
        let afterObject = ScanFixture.bytes(#"{"op":"pub"}"#) + [0]
        #expect(ScanFixture.error(afterObject) == HeraldError(
            .badJSON, "invalid JSON at byte 12: expected end of line after the request object, found byte 0x00"))
        let beforeKey = [ScanFixture.bytes("{")[0], 0] + ScanFixture.bytes(#""op":1}"#)
        #expect(ScanFixture.error(beforeKey) == HeraldError(
            .badJSON, "invalid JSON at byte 1: expected a string key or '}', found byte 0x00"))
    }

    @Test func nonJSONWhitespaceIsRejected() {
        #expect(ScanFixture.error("{\u{0B}}")?.message == "invalid JSON at byte 1: expected a string key or '}', found byte 0x0B")
        #expect(ScanFixture.error("{\u{A0}}")?.message == "invalid JSON at byte 1: expected a string key or '}', found byte 0xC2")
    }

    @Test(arguments: ["0", "-0", "-0.0e-0", "123", "1E10", "1e+2", "2.5E-7", "-9.75"])
    func strictNumberGrammarStillAcceptsValidNumbers(number: String) {
        #expect(ScanFixture.error(#"{"data":"# + number + "}") == nil)
    }
}
