import Testing
@testable import HeraldWire

/// The canonical `pub` fast path: it records exactly what the general scanner records, and it
/// declines every line that is not exactly canonical, so those get the general scanner's verdict.
@Suite struct RequestScannerCanonicalPubTests {
    /// What one path made of a line: the presence bits and the recorded spans, or the error.
    private struct Outcome: Equatable {
        var presence: UInt64 = 0
        var spans: [ScannedValue?] = []
        var error: HeraldError?
    }

    /// Runs `read` on `scanner` over `line` and collects its outcome (nil when `read` declines).
    private static func outcome(
        _ line: String, using scanner: RequestScanner = RequestScanner(),
        _ read: (RequestScanner, JSONInput) throws(HeraldError) -> UInt64?
    ) -> Outcome? {
        Array(line.utf8).withUnsafeBytes { buffer -> Outcome? in
            guard let base = buffer.baseAddress else { return nil }
            let input = JSONInput(base: base, count: buffer.count)
            var result = Outcome()
            do throws(HeraldError) {
                guard let presence = try read(scanner, input) else { return nil }
                result.presence = presence
                result.spans = RequestField.allCases.map { field in
                    presence & (1 &<< UInt64(field.rawValue)) != 0 ? scanner.values[field.rawValue] : nil
                }
            } catch {
                result.error = error
            }
            return result
        }
    }

    /// The general scanner's outcome for `line`.
    private static func general(_ line: String) -> Outcome? {
        outcome(line) { scanner, input throws(HeraldError) in try scanner.scanObject(input) }
    }

    /// The fast path's outcome, or nil when it declines the line.
    private static func fast(_ line: String) -> Outcome? {
        outcome(line) { scanner, input in scanner.scanCanonicalPub(input) }
    }

    /// The public `scan(_:)` outcome, and whether it reported the canonical shape.
    private static func scanned(_ line: String) -> (outcome: Outcome?, canonical: Bool) {
        let scanner = RequestScanner()
        let result = outcome(line, using: scanner) { scanner, input throws(HeraldError) in
            try scanner.scan(UnsafeRawBufferPointer(start: input.base, count: input.count))
            return scanner.presence
        }
        return (result, scanner.isCanonicalPub)
    }

    static let canonical: [String] = [
        #"{"op":"pub","ch":"orders.eu","data":"xxxxxxxxxxxxxx"}"#,
        #"{"op":"pub","ch":"a","data":"with \"escapes\" and \u00e9"}"#,
        #"{"op":"pub","ch":"a","data":"caf\#u{e9} \#u{1F600}"}"#,
        #"{"op":"pub","ch":"a.b.c","data":-12.5e+3}"#,
        #"{"op":"pub","ch":"a","data":0}"#,
        #"{"op":"pub","ch":"a","data":true}"#,
        #"{"op":"pub","ch":"a","data":false}"#,
        #"{"op":"pub","ch":"a","data":null}"#,
        #"{"op":"pub","ch":"","data":1}"#,
        #"{"op":"pub","ch":"$sys","data":1}"#,
        #"{"op":"pub","ch":"a b*>","data":1}"#,
        #"{"op":"pub","ch":"a","data":"x","rid":7}"#,
        #"{"op":"pub","ch":"a","data":"x","rid":"r-1"}"#,
        #"{"op":"pub","ch":"a","data":"x","rid":null}"#,
        #"{"op":"pub","ch":"a","data":"x","rid":true}"#,
        "{\"op\":\"pub\",\"ch\":\"a\",\"data\":1}\r",
        "{\"op\":\"pub\",\"ch\":\"a\",\"data\":1} \t\n",
        #"{"op":"pub","ch":"a","data":""# + String(repeating: "y", count: 100_000) + #""}"#,
        // Names read eight bytes per step: shorter than, exactly and past one word.
        #"{"op":"pub","ch":"abcdefg","data":1}"#,
        #"{"op":"pub","ch":"abcdefgh","data":1}"#,
        #"{"op":"pub","ch":"orders.europe.west.17","data":1}"#,
    ]

    @Test(arguments: canonical)
    func canonicalLinesRecordWhatTheGeneralScannerRecords(line: String) throws {
        let fast = try #require(Self.fast(line))
        let general = try #require(Self.general(line))
        #expect(general.error == nil)
        #expect(fast == general)
        let scanned = Self.scanned(line)
        #expect(scanned.outcome == general)
        #expect(scanned.canonical)
    }

    static let nearCanonical: [String] = [
        // Valid JSON the general scanner accepts, but not the canonical spelling.
        #"{"op":"pub","ch":"a\u002eb","data":1}"#,
        #"{"op":"pub","ch":"a\\b","data":1}"#,
        #"{"op":"pub","ch":"caf\#u{e9}","data":1}"#,
        #"{"op":"pub","ch":"a","data":{"k":[1,2]}}"#,
        #"{"op":"pub","ch":"a","data":[1]}"#,
        #"{"op":"pub","ch":"a","data":1,"rid":{"x":1}}"#,
        #"{"op":"pub","ch":"a","data":1,"rid":[1]}"#,
        #"{"op":"pub","ch":"a","data":1,"echo":true}"#,
        #"{"op":"pub","ch":"a","data":1,"rid":1,"tag":null}"#,
        #"{"op":"pub","data":1,"ch":"a"}"#,
        #"{"ch":"a","op":"pub","data":1}"#,
        #"{"op":"pub","rid":1,"ch":"a","data":1}"#,
        #"{ "op":"pub","ch":"a","data":1}"#,
        #"{"op":"pub","ch":"a","data": 1}"#,
        #"{"op":"pub","ch":"a","data":1 }"#,
        #"{"op":"pub","ch":"a","data":"x","rid":1 }"#,
        #" {"op":"pub","ch":"a","data":1}"#,
        #"{"op":"pubx","ch":"a","data":1}"#,
        #"{"op":"pub","ch":"a"}"#,
        // Wrong types: accepted by the scanner, refused by the broker.
        #"{"op":"pub","ch":7,"data":1}"#,
        #"{"op":"pub","ch":null,"data":1}"#,
        // Malformed: the general scanner's error must come out unchanged.
        #"{"op":"pub","ch":"a","data":1"#,
        #"{"op":"pub","ch":"a","data":"x""#,
        #"{"op":"pub","ch":"a","data":1,"rid":2"#,
        #"{"op":"pub","ch":"a","data":1}}"#,
        #"{"op":"pub","ch":"a","data":1}x"#,
        #"{"op":"pub","ch":"a","data":1} {"op":"ping"}"#,
        #"{"op":"pub","ch":"a","data":1,}"#,
        #"{"op":"pub","ch":"a","data":01}"#,
        #"{"op":"pub","ch":"a","data":1.}"#,
        #"{"op":"pub","ch":"a","data":tru}"#,
        #"{"op":"pub","ch":"a","data":"unterminated}"#,
        #"{"op":"pub","ch":"a","data":"bad \x escape"}"#,
        #"{"op":"pub","ch":"a","data":"\ud800"}"#,
        "{\"op\":\"pub\",\"ch\":\"a\",\"data\":\"raw \u{01} control\"}",
        "{\"op\":\"pub\",\"ch\":\"a\u{01}\",\"data\":1}",
        #"{"op":"pub","ch":"a","data":}"#,
        #"{"op":"pub","ch":"a","data":1,"rid":}"#,
        #"{"op":"pub","ch":"a","data":1,"rid":1,"rid":2}"#,
        #"{"op":"pub","ch":"a","data":1,"data":2}"#,
        #"{"op":"pub","ch":"a","ch":"b","data":1}"#,
        #"{"op":"pub","op":"pub","ch":"a","data":1}"#,
        #"{"op":"pub","ch":"a","data""#,
        #"{"op":"pub","ch":"a"#,
        #"{"op":"pub","ch":""#,
        #"{"op":"pub","ch":"a","data":1,"rid":-}"#,
        // Past the first word of a name: an escape, a non-ASCII byte, a control byte, no end.
        #"{"op":"pub","ch":"orders.europe\u002ewest","data":1}"#,
        #"{"op":"pub","ch":"orders.europe.caf\#u{e9}","data":1}"#,
        "{\"op\":\"pub\",\"ch\":\"orders.europe\u{01}x\",\"data\":1}",
        #"{"op":"pub","ch":"orders.europe.west"#,
    ]

    @Test(arguments: nearCanonical)
    func nearCanonicalLinesAreLeftToTheGeneralScanner(line: String) {
        #expect(Self.fast(line) == nil)
        let scanned = Self.scanned(line)
        #expect(scanned.outcome == Self.general(line))
        #expect(!scanned.canonical)
    }

    @Test func invalidUTF8InDataGetsTheGeneralError() {
        let line = Array(#"{"op":"pub","ch":"a","data":""#.utf8) + [0xC0, 0xAF] + Array(#""}"#.utf8)
        let error = ScanFixture.error(line)
        #expect(error?.code == .badJSON)
        #expect(error?.message.contains("invalid UTF-8") == true)
    }

    @Test func theSpelledOutWordsMatchTheirStrings() {
        func word(_ text: String) -> UInt64 {
            Array(text.utf8).enumerated().reduce(0) { $0 | UInt64($1.element) << (8 * UInt64($1.offset)) }
        }
        #expect(RequestScanner.canonicalPubWord0 == word(#"{"op":"p"#))
        #expect(RequestScanner.canonicalPubWord1 == word(#"ub","ch""#))
        #expect(RequestScanner.canonicalDataKeyWord == word(#"","data""#))
        #expect(RequestScanner.canonicalRidKeyWord == word(#","rid":"#))
        #expect(RequestScanner.canonicalChannelStart == #"{"op":"pub","ch":""#.utf8.count)
    }

    @Test func aGeneralLineAfterACanonicalOneClearsTheFlag() throws {
        let scanner = RequestScanner()
        try Array(#"{"op":"pub","ch":"a","data":1}"#.utf8).withUnsafeBytes { try scanner.scan($0) }
        #expect(scanner.isCanonicalPub)
        try Array(#"{"op":"ping"}"#.utf8).withUnsafeBytes { try scanner.scan($0) }
        #expect(!scanner.isCanonicalPub)
        _ = Array(#"{"op":"pub","ch":"a","data":1"#.utf8).withUnsafeBytes { try? scanner.scan($0) }
        #expect(!scanner.isCanonicalPub)
    }
}
