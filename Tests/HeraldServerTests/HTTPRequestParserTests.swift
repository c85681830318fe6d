import Testing
@testable import HeraldServer

/// The monitor's HTTP head parser, fed whole, byte by byte and split at every boundary.
struct HTTPRequestParserTests {
    private func parse(_ text: String, maxHeadBytes: Int = 8192) -> HTTPRequestParser.Outcome {
        var parser = HTTPRequestParser(maxHeadBytes: maxHeadBytes)
        return parser.feed(Array(text.utf8))
    }

    private func request(_ outcome: HTTPRequestParser.Outcome) -> HTTPRequest? {
        if case .complete(let request) = outcome { return request }
        return nil
    }

    private static let curl = "GET /metrics?name=x HTTP/1.1\r\nHost: 127.0.0.1:9740\r\nUser-Agent: curl/7.88.1\r\nAccept: */*\r\n\r\n"

    @Test func aCurlRequestParsesIntoMethodPathVersionAndFields() throws {
        let parsed = try #require(request(parse(Self.curl)))
        #expect(parsed.method == "GET")
        #expect(parsed.target == "/metrics?name=x")
        #expect(parsed.path == "/metrics")
        #expect(parsed.minorVersion == 1)
        #expect(parsed.fields.count == 3)
        #expect(parsed.header("host") == "127.0.0.1:9740")
        #expect(parsed.header("USER-AGENT") == "curl/7.88.1")
    }

    @Test func everySplitOfTheHeadGivesTheSameRequest() throws {
        let bytes = Array(Self.curl.utf8)
        let whole = try #require(request(parse(Self.curl)))
        for cut in 0...bytes.count {
            var parser = HTTPRequestParser()
            let first = parser.feed(Array(bytes[..<cut]))
            if cut < bytes.count { #expect(first == .incomplete, "cut at \(cut)") }
            #expect(parser.feed(Array(bytes[cut...])) == .complete(whole), "cut at \(cut)")
        }
        for cut in 0...bytes.count {
            for second in cut...bytes.count {
                var parser = HTTPRequestParser()
                parser.feed(Array(bytes[..<cut]))
                parser.feed(Array(bytes[cut..<second]))
                #expect(parser.feed(Array(bytes[second...])) == .complete(whole), "cuts at \(cut), \(second)")
            }
        }
    }

    @Test func byteByByteFeedingCompletesOnTheLastByteOnly() throws {
        let bytes = Array(Self.curl.utf8)
        var parser = HTTPRequestParser()
        for (position, byte) in bytes.enumerated() {
            let outcome = parser.feed([byte])
            if position < bytes.count - 1 {
                #expect(outcome == .incomplete, "byte \(position)")
            } else {
                #expect(request(outcome)?.path == "/metrics")
            }
        }
    }

    @Test func bareLineFeedsAndLeadingBlankLinesAreAccepted() throws {
        let parsed = try #require(request(parse("\r\n\nGET /healthz HTTP/1.1\nHost: x\n\n")))
        #expect(parsed.path == "/healthz")
        #expect(parsed.header("Host") == "x")
    }

    @Test func http10NeedsNoHostAndHttp11NeedsExactlyOne() {
        #expect(request(parse("GET /varz HTTP/1.0\r\n\r\n"))?.minorVersion == 0)
        #expect(parse("GET /varz HTTP/1.1\r\n\r\n") == .rejected(.badRequest))
        #expect(parse("GET /varz HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n") == .rejected(.badRequest))
    }

    @Test func bytesAfterTheHeadAreIgnored() throws {
        let parsed = try #require(request(parse("GET /varz HTTP/1.0\r\n\r\nGET /other HTTP/1.0\r\n\r\n")))
        #expect(parsed.path == "/varz")
        var parser = HTTPRequestParser()
        parser.feed(Array("GET /varz HTTP/1.0\r\n\r\n".utf8))
        #expect(request(parser.feed(Array("garbage\0".utf8)))?.path == "/varz")
    }

    @Test func absoluteFormAndAsteriskTargetsGiveAPath() {
        #expect(request(parse("GET http://localhost:9740/metrics HTTP/1.1\r\nHost: localhost\r\n\r\n"))?.path == "/metrics")
        #expect(request(parse("GET HTTPS://localhost HTTP/1.1\r\nHost: localhost\r\n\r\n"))?.path == "/")
        #expect(request(parse("OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n"))?.path == "*")
    }

    @Test(arguments: [
        "GARBAGE\r\n\r\n",
        "GET /varz\r\n\r\n",
        "GET  /varz HTTP/1.0\r\n\r\n",
        "GET /varz HTTP/1.0 \r\n\r\n",
        "GET /va rz HTTP/1.0\r\n\r\n",
        "GET varz HTTP/1.0\r\n\r\n",
        "GE(T /varz HTTP/1.0\r\n\r\n",
        "GET /varz HTTP/1.0\r\nNo colon here\r\n\r\n",
        "GET /varz HTTP/1.0\r\nName : value\r\n\r\n",
        "GET /varz HTTP/1.0\r\n: empty name\r\n\r\n",
        "GET /varz HTTP/1.0\r\nX: a\r\n folded\r\n\r\n",
        "GET /varz HTTP/1.0\r\nX: a\u{1}b\r\n\r\n",
        "GET /varz\u{0} HTTP/1.0\r\n\r\n",
        "GET /varz FTP/1.0\r\n\r\n",
        "GET /varz http/1.1\r\n\r\n",
        "GET /varz HTTP/1.10\r\n\r\n",
        "GET /va\rrz HTTP/1.0\r\n\r\n",
    ])
    func malformedHeadsAreRejectedWith400(text: String) {
        #expect(parse(text) == .rejected(.badRequest))
    }

    @Test func otherHTTPVersionsAreRejectedWith505() {
        #expect(parse("GET /varz HTTP/2.0\r\n\r\n") == .rejected(.versionNotSupported))
        #expect(parse("GET /varz HTTP/1.2\r\n\r\n") == .rejected(.versionNotSupported))
        #expect(parse("GET /varz HTTP/0.9\r\n\r\n") == .rejected(.versionNotSupported))
    }

    @Test func aHeadOverTheCapIs431AndALongRequestLine414() {
        let field = "X-Padding: " + String(repeating: "a", count: 200) + "\r\n"
        let head = "GET /varz HTTP/1.1\r\nHost: x\r\n" + String(repeating: field, count: 50) + "\r\n"
        #expect(parse(head, maxHeadBytes: 8192) == .rejected(.headersTooLarge))
        #expect(request(parse(head, maxHeadBytes: 16384)) != nil)
        let longTarget = "GET /" + String(repeating: "a", count: 9000) + " HTTP/1.1\r\nHost: x\r\n\r\n"
        #expect(parse(longTarget) == .rejected(.uriTooLong))
    }

    @Test func aHeadOfExactlyTheCapIsAcceptedAndOneMoreByteIsNot() {
        let base = "GET /varz HTTP/1.0\r\nX: \r\n\r\n"
        let padding = 100 - base.utf8.count
        let exact = "GET /varz HTTP/1.0\r\nX: " + String(repeating: "a", count: padding) + "\r\n\r\n"
        #expect(exact.utf8.count == 100)
        #expect(request(parse(exact, maxHeadBytes: 100)) != nil)
        #expect(parse(exact, maxHeadBytes: 99) == .rejected(.headersTooLarge))
    }

    @Test func theCapHoldsWhenTheHeadArrivesInSmallPieces() {
        var parser = HTTPRequestParser(maxHeadBytes: 1024)
        _ = parser.feed(Array("GET /varz HTTP/1.1\r\n".utf8))
        var outcome = HTTPRequestParser.Outcome.incomplete
        for _ in 0..<200 where outcome == .incomplete {
            outcome = parser.feed(Array("X-A: b\r\n".utf8))
        }
        #expect(outcome == .rejected(.headersTooLarge))
    }

    @Test func anUnfinishedHeadStaysIncompleteAndReportsThatItStarted() {
        var parser = HTTPRequestParser()
        #expect(!parser.hasStarted)
        #expect(parser.feed(Array("\r\n".utf8)) == .incomplete)
        #expect(!parser.hasStarted, "blank lines before the request do not count")
        #expect(parser.feed(Array("GET /varz HTTP/1.1\r\nHost: x\r\n".utf8)) == .incomplete)
        #expect(parser.hasStarted)
    }
}

/// Random heads, good and bad: the outcome never depends on how the bytes were split.
struct HTTPRequestParserSplitTests {
    private static let pieces = [
        "GET ", "HEAD ", "POST ", "G(T ", "/metrics", "/varz?x", "*", " ", "  ", "HTTP/1.1", "HTTP/1.0", "HTTP/2.0",
        "\r\n", "\n", "\r", "Host: a", "X:y", " folded", ":", "\u{0}", "\u{7f}", "é", String(repeating: "z", count: 300),
    ]

    @Test func randomHeadsGiveTheSameOutcomeWhateverTheSplit() {
        var generator = SplitMix(seed: 0x5eed)
        for _ in 0..<500 {
            var text = ""
            for _ in 0..<Int.random(in: 1...12, using: &generator) {
                text += Self.pieces[Int.random(in: 0..<Self.pieces.count, using: &generator)]
            }
            if Bool.random(using: &generator) { text += "\r\n\r\n" }
            let bytes = Array(text.utf8)
            var whole = HTTPRequestParser(maxHeadBytes: 512)
            let expected = whole.feed(bytes)
            var split = HTTPRequestParser(maxHeadBytes: 512)
            var position = 0
            var outcome = HTTPRequestParser.Outcome.incomplete
            while position < bytes.count {
                let length = Int.random(in: 1...max(1, bytes.count - position), using: &generator)
                outcome = split.feed(Array(bytes[position..<position + length]))
                position += length
            }
            if bytes.isEmpty { outcome = split.outcome }
            #expect(outcome == expected, "\(text.debugDescription)")
        }
    }
}

/// A small deterministic generator, so a failure reproduces.
private struct SplitMix: RandomNumberGenerator {
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
