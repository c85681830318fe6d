import Testing
@testable import HeraldWire

/// Valid frames: what the scanner accepts and the spans it records.
@Suite struct RequestScannerTests {
    @Test func publishFrameRecordsEveryKnownField() throws {
        let line = #"{"op":"pub","ch":"orders.eu","data":{"id":7},"rid":12,"echo":true,"once":false,"args":[1,2],"tag":null}"#
        try ScanFixture.scan(line) { scanner throws in
            #expect(scanner[.op] == ScannedValue(kind: .string, start: 6, end: 11))
            #expect(try scanner.string(.op) == Array("pub".utf8))
            #expect(try scanner.string(.ch) == Array("orders.eu".utf8))
            #expect(scanner[.data]?.kind == .object)
            #expect(try scanner.int(.rid) == 12)
            #expect(try scanner.bool(.echo) == true)
            #expect(try scanner.bool(.once) == false)
            #expect(scanner[.args]?.kind == .array)
            #expect(scanner[.tag]?.kind == .null)
            #expect(scanner[.sub] == nil)
        }
    }

    @Test func rawDataIsTheInputBytesVerbatim() throws {
        let data = #"{ "a" : [1, -2.5e+3, "x\"y", {"deep":[[],{}]}, true, null ] ,"b":"\u00e9"}"#
        let line = #"{"op":"pub","data":"# + data + #","ch":"c"}"#
        try ScanFixture.scan(line) { scanner throws in
            let raw = try #require(scanner.raw(.data))
            #expect(Array(raw) == Array(data.utf8))
        }
    }

    @Test(arguments: [#""text""#, "-12.5e-3", "true", "false", "null", "[]", "{}", #"[{"a":[{}]}]"#, "0"])
    func rawSpanCoversEachValueKindExactly(value: String) throws {
        try ScanFixture.scan(#"{"data":"# + value + #" ,"op":"ping"}"#) { scanner throws in
            #expect(Array(try #require(scanner.raw(.data))) == Array(value.utf8))
        }
    }

    @Test func stringSpanIncludesQuotesAndNotesEscapes() throws {
        try ScanFixture.scan(#"{"ch":"a\nb","op":"ping"}"#) { scanner throws in
            #expect(scanner[.ch] == ScannedValue(kind: .string, start: 6, end: 12, hasEscapes: true))
            #expect(scanner[.op] == ScannedValue(kind: .string, start: 18, end: 24, hasEscapes: false))
            #expect(Array(try #require(scanner.raw(.ch))) == Array(#""a\nb""#.utf8))
        }
    }

    @Test func unknownKeysAreIgnoredButValidated() throws {
        try ScanFixture.scan(#"{"zzz":{"op":"nested"},"op":"ping","extra":[1,{"ch":2}]}"#) { scanner throws in
            #expect(try scanner.string(.op) == Array("ping".utf8))
            #expect(scanner[.ch] == nil)
        }
        #expect(ScanFixture.error(#"{"zzz":[1,],"op":"ping"}"#)?.code == .badJSON)
    }

    @Test func nestedKnownKeyNamesDoNotCountAsTopLevel() throws {
        try ScanFixture.scan(#"{"data":{"op":"x","data":{"op":"y"}},"op":"pub"}"#) { scanner throws in
            #expect(try scanner.string(.op) == Array("pub".utf8))
        }
    }

    @Test func everyRequestFieldKeyIsRecognised() throws {
        for field in RequestField.allCases {
            try ScanFixture.scan(#"{""# + field.key + #"":1}"#) { scanner throws in
                #expect(scanner[field] != nil, "key \(field.key)")
                #expect(RequestField.allCases.filter { scanner[$0] != nil } == [field])
            }
        }
    }

    @Test(arguments: ["o", "opx", "Op", "OP", "op ", " op", "timeout_m", "timeout_mss", "timeoutMs", "ifRev", "datadata"])
    func nearMissKeysAreUnknown(key: String) throws {
        try ScanFixture.scan(#"{""# + key + #"":1}"#) { scanner throws in
            #expect(RequestField.allCases.allSatisfy { scanner[$0] == nil })
        }
    }

    @Test func escapedKeysAreDecodedBeforeMatching() throws {
        try ScanFixture.scan(#"{"\u006fp":"ping","c\u0068":"x","timeout\u005fms":5,"\/op":1}"#) { scanner throws in
            #expect(try scanner.string(.op) == Array("ping".utf8))
            #expect(try scanner.string(.ch) == Array("x".utf8))
            #expect(try scanner.int(.timeoutMs) == 5)
        }
    }

    @Test func escapedKeyWithNulDoesNotMatchShorterKey() throws {
        try ScanFixture.scan(#"{"op\u0000":"x"}"#) { scanner throws in
            #expect(scanner[.op] == nil)
        }
    }

    @Test func emptyObjectIsAValidRequestWithNoFields() throws {
        try ScanFixture.scan("{}") { scanner throws in
            #expect(RequestField.allCases.allSatisfy { scanner[$0] == nil && !scanner.isPresent($0) })
        }
    }

    @Test func whitespaceAroundEveryTokenIsAccepted() throws {
        let line = " \t\r\n{ \"op\" :\t\"pub\" ,\n\"data\" : [ 1 , { \"a\" : null } ] , \"max\"\r: 3 }\r\n "
        try ScanFixture.scan(line) { scanner throws in
            #expect(try scanner.string(.op) == Array("pub".utf8))
            #expect(try scanner.int(.max) == 3)
            #expect(Array(try #require(scanner.raw(.data))) == Array(#"[ 1 , { "a" : null } ]"#.utf8))
        }
    }

    @Test func unicodeTextPassesThroughUnchanged() throws {
        let text = "héllo wörld ✓ 日本語 🎉 \u{10FFFF}"
        try ScanFixture.scan(#"{"ch":""# + text + #""}"#) { scanner throws in
            #expect(try scanner.string(.ch) == Array(text.utf8))
            #expect(scanner[.ch]?.hasEscapes == false)
        }
    }

    @Test func escapesAreResolvedIncludingSurrogatePairs() throws {
        let line = #"{"ch":"q\"b\\s\/f\bf\fn\nr\rt\t \u0041\u00e9\u20AC\ud83c\udf89\uDBFF\uDFFF\u0000"}"#
        let expected = "q\"b\\s/f\u{8}f\u{C}n\nr\rt\t Aé€🎉\u{10FFFF}\u{0}"
        try ScanFixture.scan(line) { scanner throws in
            #expect(try scanner.string(.ch) == Array(expected.utf8))
        }
    }

    @Test func rescanReplacesPreviousFields() throws {
        let scanner = RequestScanner()
        let first = ScanFixture.bytes(#"{"op":"sub","ch":"a"}"#)
        let second = ScanFixture.bytes(#"{"op":"pub"}"#)
        try first.withUnsafeBytes { try scanner.scan($0) }
        try second.withUnsafeBytes { line throws in
            try scanner.scan(line)
            #expect(try scanner.string(.op) == Array("pub".utf8))
            #expect(scanner[.ch] == nil)
        }
    }

    @Test func failedScanLeavesNoFields() throws {
        let scanner = RequestScanner()
        try ScanFixture.bytes(#"{"op":"sub","ch":"a"}"#).withUnsafeBytes { try scanner.scan($0) }
        let bad = ScanFixture.bytes(#"{"op":"pub","ch":}"#)
        bad.withUnsafeBytes { line in
            #expect(throws: HeraldError.self) { try scanner.scan(line) }
            return ()
        }
        #expect(scanner[.op] == nil)
        #expect(scanner.raw(.op) == nil)
        #expect(!scanner.isPresent(.ch))
    }

    @Test func nullCountsAsAbsentForPresenceButNotForTheSubscript() throws {
        try ScanFixture.scan(#"{"rid":null,"ch":"x"}"#) { scanner throws in
            #expect(!scanner.isPresent(.rid))
            #expect(scanner.isPresent(.ch))
            #expect(scanner[.rid]?.kind == .null)
            #expect(Array(try #require(scanner.raw(.rid))) == Array("null".utf8))
        }
    }

    @Test func smallerMaxDepthIsHonoured() throws {
        #expect(ScanFixture.error(ScanFixture.bytes(#"{"a":1}"#), maxDepth: 1) == nil)
        let error = ScanFixture.error(ScanFixture.bytes(#"{"a":[]}"#), maxDepth: 1)
        #expect(error == HeraldError(.badJSON, "nesting deeper than 1"))
    }

    @Test func emptyBufferWithoutBaseAddressIsRejected() {
        let scanner = RequestScanner()
        #expect(throws: HeraldError(.badJSON, "invalid JSON at byte 0: empty request")) {
            try scanner.scan(UnsafeRawBufferPointer(start: nil, count: 0))
        }
    }
}
