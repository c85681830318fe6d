import Testing
@testable import HeraldWire

/// Nesting depth, number size and duplicate-key limits.
@Suite struct RequestScannerLimitsTests {
    /// `{"data":` + `depth - 1` nested arrays + `}`: the object itself is level 1.
    static func nested(depth: Int) -> [UInt8] {
        ScanFixture.bytes(#"{"data":"#) + Array(repeating: 0x5B, count: depth - 1)
            + Array(repeating: 0x5D, count: depth - 1) + ScanFixture.bytes("}")
    }

    @Test func nestingOf64LevelsIsAccepted() throws {
        try ScanFixture.scan(Self.nested(depth: 64)) { scanner throws in
            #expect(scanner[.data]?.kind == .array)
            #expect(scanner.raw(.data)?.count == 126)
        }
    }

    @Test func nestingOf65LevelsIsRejected() {
        #expect(ScanFixture.error(Self.nested(depth: 65)) == HeraldError(.badJSON, "nesting deeper than 64"))
    }

    @Test func deepObjectsCountLikeArrays() {
        let open = String(repeating: #"{"a":"#, count: 63)
        let ok = #"{"data":"# + open + "1" + String(repeating: "}", count: 63) + "}"
        #expect(ScanFixture.error(ok) == nil)
        let deep = #"{"data":"# + open + "{}" + String(repeating: "}", count: 63) + "}"
        #expect(ScanFixture.error(deep) == HeraldError(.badJSON, "nesting deeper than 64"))
    }

    @Test func hundredThousandOpenBracketsDoNotCrash() {
        let brackets = [UInt8](repeating: 0x5B, count: 100_000)
        #expect(ScanFixture.error(brackets) == HeraldError(.badJSON, "request must be a JSON object"))
        #expect(ScanFixture.error(ScanFixture.bytes(#"{"data":"#) + brackets) == HeraldError(.badJSON, "nesting deeper than 64"))
        let braces = [UInt8](repeating: 0x7B, count: 100_000)
        #expect(ScanFixture.error(braces)?.code == .badJSON)
    }

    @Test func veryDeepNestingUnderAHighLimitNeedsNoRecursion() {
        let line = ScanFixture.bytes(#"{"data":"#) + [UInt8](repeating: 0x5B, count: 100_000)
            + [UInt8](repeating: 0x5D, count: 100_000) + ScanFixture.bytes("}")
        #expect(ScanFixture.error(line, maxDepth: 200_000) == nil)
    }

    @Test func fourHundredDigitNumberIsValidInData() throws {
        let digits = "9" + String(repeating: "0", count: 399)
        try ScanFixture.scan(#"{"data":"# + digits + #","op":"pub"}"#) { scanner throws in
            #expect(Array(try #require(scanner.raw(.data))) == Array(digits.utf8))
        }
    }

    @Test func fourHundredDigitNumberAsMaxIsOutOfRange() throws {
        let digits = "9" + String(repeating: "0", count: 399)
        let error = try ScanFixture.accessorError(#"{"max":"# + digits + "}") { scanner throws(HeraldError) in
            _ = try scanner.int(.max)
        }
        #expect(error == HeraldError(.badField, "field 'max' out of range, must fit a 64-bit signed integer"))
    }

    @Test(arguments: [("9223372036854775807", Int.max), ("-9223372036854775808", Int.min), ("-0", 0), ("0", 0), ("-1", -1)])
    func integerBoundsAreExact(text: String, value: Int) throws {
        try ScanFixture.scan(#"{"max":"# + text + "}") { scanner throws in
            #expect(try scanner.int(.max) == value)
        }
    }

    @Test(arguments: ["9223372036854775808", "-9223372036854775809", "18446744073709551616", "-99999999999999999999"])
    func integersJustPastBoundsAreOutOfRange(text: String) throws {
        let error = try ScanFixture.accessorError(#"{"max":"# + text + "}") { scanner throws(HeraldError) in
            _ = try scanner.int(.max)
        }
        #expect(error?.code == .badField)
        #expect(error?.message.contains("out of range") == true)
    }

    @Test func duplicateKnownKeyIsRejected() {
        #expect(ScanFixture.error(#"{"ch":"a","op":"pub","ch":"b"}"#) == HeraldError(.badJSON, #"duplicate key "ch""#))
        #expect(ScanFixture.error(#"{"timeout_ms":1,"timeout_ms":1}"#) == HeraldError(.badJSON, #"duplicate key "timeout_ms""#))
    }

    @Test func duplicateKnownKeySpelledWithEscapesIsRejected() {
        #expect(ScanFixture.error(#"{"ch":"a","c\u0068":"b"}"#) == HeraldError(.badJSON, #"duplicate key "ch""#))
    }

    @Test func duplicateKnownKeyWithNullIsStillADuplicate() {
        #expect(ScanFixture.error(#"{"rid":null,"rid":1}"#) == HeraldError(.badJSON, #"duplicate key "rid""#))
    }

    @Test func duplicateUnknownOrNestedKeysAreAllowed() {
        #expect(ScanFixture.error(#"{"x":1,"x":2,"op":"pub"}"#) == nil)
        #expect(ScanFixture.error(#"{"data":{"ch":1,"ch":2},"op":"pub"}"#) == nil)
    }

    @Test func longLineIsScannedCompletely() throws {
        let payload = String(repeating: "abcdefgh", count: 100_000)
        try ScanFixture.scan(#"{"data":""# + payload + #"","op":"pub"}"#) { scanner throws in
            #expect(scanner.raw(.data)?.count == payload.utf8.count + 2)
            #expect(try scanner.string(.op) == Array("pub".utf8))
        }
    }
}
