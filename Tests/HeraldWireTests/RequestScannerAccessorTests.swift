import Testing
@testable import HeraldWire

/// Typed accessors: null and absence, type errors, decoding and buffer reuse.
@Suite struct RequestScannerAccessorTests {
    @Test func absentAndNullFieldsReadAsNil() throws {
        try ScanFixture.scan(#"{"ch":null,"max":null,"echo":null}"#) { scanner throws in
            #expect(try scanner.string(.ch) == nil)
            #expect(try scanner.int(.max) == nil)
            #expect(try scanner.bool(.echo) == nil)
            #expect(try scanner.withString(.ch) { _ throws(HeraldError) in 1 } == nil)
            #expect(try scanner.string(.op) == nil)
            #expect(try scanner.int(.rid) == nil)
            #expect(try scanner.bool(.once) == nil)
            #expect(scanner.raw(.op) == nil)
        }
    }

    @Test(arguments: [
        (#""5""#, "string"), ("true", "boolean"), ("false", "boolean"), ("[1]", "array"), (#"{"a":1}"#, "object"),
    ])
    func intOfWrongTypeIsBadField(value: String, kind: String) throws {
        let error = try ScanFixture.accessorError(#"{"max":"# + value + "}") { scanner throws(HeraldError) in
            _ = try scanner.int(.max)
        }
        #expect(error == HeraldError(.badField, "field 'max' must be an integer, got \(kind)"))
    }

    @Test(arguments: ["1.0", "1e3", "-0.5", "2E+1", "1" + String(repeating: "0", count: 400) + ".5"])
    func intWithFractionOrExponentIsBadField(value: String) throws {
        let error = try ScanFixture.accessorError(#"{"max":"# + value + "}") { scanner throws(HeraldError) in
            _ = try scanner.int(.max)
        }
        #expect(error?.code == .badField)
        #expect(error?.message.hasPrefix("field 'max' must be an integer, got ") == true)
        #expect((error?.message.count ?? 0) < 80)
    }

    @Test func boolOfWrongTypeIsBadField() throws {
        let error = try ScanFixture.accessorError(#"{"echo":1}"#) { scanner throws(HeraldError) in
            _ = try scanner.bool(.echo)
        }
        #expect(error == HeraldError(.badField, "field 'echo' must be a boolean, got number"))
    }

    @Test func stringOfWrongTypeIsBadField() throws {
        let error = try ScanFixture.accessorError(#"{"ch":["a"]}"#) { scanner throws(HeraldError) in
            _ = try scanner.string(.ch)
        }
        #expect(error == HeraldError(.badField, "field 'ch' must be a string, got array"))
        let viaBody = try ScanFixture.accessorError(#"{"ch":false}"#) { scanner throws(HeraldError) in
            _ = try scanner.withString(.ch) { _ throws(HeraldError) in () }
        }
        #expect(viaBody == HeraldError(.badField, "field 'ch' must be a string, got boolean"))
    }

    /// `unescapedString`, the publish path's accessor: the contents of a plain string, and nil
    /// for everything `withString` must handle (escapes, wrong types, null, absence).
    @Test func unescapedStringIsOnlyAPlainStringsContents() throws {
        try ScanFixture.scan(#"{"ch":"orders.eu","tag":"a\u002eb","max":3,"rid":null}"#) { scanner throws in
            let ch = try #require(scanner.unescapedString(.ch))
            #expect(Array(ch) == Array("orders.eu".utf8))
            #expect(scanner.unescapedString(.tag) == nil, "an escape is left to withString")
            #expect(scanner.unescapedString(.max) == nil, "a number is not a string")
            #expect(scanner.unescapedString(.rid) == nil, "null reads as absent")
            #expect(scanner.unescapedString(.op) == nil, "absent")
        }
        try ScanFixture.scan(#"{"ch":""}"#) { scanner throws in
            #expect(try #require(scanner.unescapedString(.ch)).isEmpty)
        }
    }

    @Test func withStringWithoutEscapesPointsIntoTheLine() throws {
        let line = ScanFixture.bytes(#"{"op":"pub","ch":"orders"}"#)
        let scanner = RequestScanner()
        try line.withUnsafeBytes { buffer throws in
            try scanner.scan(buffer)
            let pointer = try scanner.withString(.ch) { bytes throws(HeraldError) in bytes.baseAddress }
            #expect(pointer == buffer.baseAddress.map { $0 + 18 })
        }
    }

    @Test func withStringReusesItsDecodeBuffer() throws {
        try ScanFixture.scan(#"{"ch":"a\tb","op":"x\ny"}"#) { scanner throws in
            let first = try scanner.withString(.ch) { bytes throws(HeraldError) in bytes.baseAddress }
            let second = try scanner.withString(.op) { bytes throws(HeraldError) in bytes.baseAddress }
            #expect(first != nil && first == second)
        }
    }

    @Test func nestedWithStringCallsDecodeIntoSeparateBuffers() throws {
        try ScanFixture.scan(#"{"ch":"a\tb","op":"x\ny"}"#) { scanner throws in
            let pair = try scanner.withString(.ch) { outer throws(HeraldError) -> ([UInt8], [UInt8]?) in
                let inner = try scanner.withString(.op) { Array($0) }
                return (Array(outer), inner)
            }
            #expect(pair?.0 == Array("a\tb".utf8))
            #expect(pair?.1 == Array("x\ny".utf8))
        }
    }

    @Test func longEscapedStringGrowsTheDecodeBuffer() throws {
        let text = String(repeating: #"\u00e9x"#, count: 1_000)
        try ScanFixture.scan(#"{"ch":""# + text + #""}"#) { scanner throws in
            #expect(try scanner.string(.ch) == Array(String(repeating: "éx", count: 1_000).utf8))
        }
    }

    @Test func withStringPropagatesTheBodysError() throws {
        let error = try ScanFixture.accessorError(#"{"ch":"x"}"#) { scanner throws(HeraldError) in
            _ = try scanner.withString(.ch) { _ throws(HeraldError) -> Int in throw HeraldError(.badChannel, "nope") }
        }
        #expect(error == HeraldError(.badChannel, "nope"))
    }

    @Test func emptyStringIsPresentAndEmpty() throws {
        try ScanFixture.scan(#"{"ch":""}"#) { scanner throws in
            #expect(scanner.isPresent(.ch))
            #expect(try scanner.string(.ch) == [])
        }
    }
}
