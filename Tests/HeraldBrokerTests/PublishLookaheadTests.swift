import Testing
@testable import HeraldBroker

/// The look-ahead over a read's lines (`PublishLookahead`) only hints the caches: it runs
/// only with a large channel table, reads nothing outside the read, and every line still
/// means what it says, whatever the lines look like.
@Suite struct PublishLookaheadTests {
    @Test func itIsOffBelowTheTableSizeWhereItPays() {
        let harness = BrokerHarness(BrokerConfig(epoch: "e"))
        let publisher = harness.connect()
        for k in 0..<100 { harness.send(publisher, #"{"op":"pub","ch":"few.c\#(k)","data":1}"#) }
        let bytes: [UInt8] = Array(#"{"op":"pub","ch":"few.c1","data":1}"#.utf8) + [10]
        #expect(bytes.withUnsafeBytes { harness.broker.lookahead(over: $0) } == nil)
    }

    @Test func everyLineOfAReadWithTheLookaheadMeansWhatItSays() throws {
        let harness = BrokerHarness(BrokerConfig(epoch: "e"))
        let publisher = harness.connect(echo: false)
        let channels = PublishLookahead.minimumChannels + 100
        for k in 0..<channels { harness.send(publisher, #"{"op":"pub","ch":"la.c\#(k)","data":0}"#) }
        let subscriber = harness.connect()
        harness.subscribe(subscriber, #""ch":"la.>""#)
        // Canonical publishes to old and new channels, others it cannot read a name from,
        // blank lines, a name without its closing quote, a short line, and a last line
        // without its newline: the look-ahead must step over all of them.
        let lines = [
            #"{"op":"pub","ch":"la.c1","data":1}"#,
            #"{"op":"pub","ch":"la.c65600","data":2}"#,
            "",
            #"{"ch":"la.c7","op":"pub","data":3}"#,
            #"{"op":"pub","ch":"la.brand.new","data":4}"#,
            #"{"op":"pub","ch":"la.c"#,
            "{}",
            "",
            #"{"op":"pub","ch":"la.c2","data":5}"#,
            #"{"op":"pub","ch":"la.c2","data":6}"#,
            #"{"op":"pub","ch":"la.c3","data":7}"#,
            #"{"op":"pub","ch":"la.c65635","data":8}"#,
        ]
        let read = Array(lines.joined(separator: "\n").utf8)
        try read.withUnsafeBytes { bytes in
            var lookahead = try #require(harness.broker.lookahead(over: bytes))
            for line in lines where !line.isEmpty {
                harness.broker.advance(&lookahead)
                harness.send(publisher, line)
            }
        }
        let data = harness.frames(subscriber).compactMap { $0["data"] as? Int }
        #expect(data == [1, 2, 3, 4, 5, 6, 7, 8])
        #expect(harness.broker.channels[Array("la.brand.new".utf8)] != nil)
    }
}
