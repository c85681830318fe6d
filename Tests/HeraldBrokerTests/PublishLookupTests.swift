import HeraldBroker
import Testing

/// A publisher going round several channels: each existing one is found by one lookup with
/// the name copied into a reused key (in place when its length is the last name's), and only
/// a name not in the table is validated, so bad names are still refused.
@Suite struct PublishLookupTests {
    @Test func roundRobinPublishesFindTheirChannelsAndBadNamesAreStillRefused() throws {
        let harness = BrokerHarness(BrokerConfig())
        let subscriber = harness.connect()
        #expect(harness.subscribe(subscriber, #""ch":"x.>""#)["ok"] as? String == "sub")
        let publisher = harness.connect()
        let names = ["x.1", "x.22", "x.3", "x.1", "x.333", "x.22", "x.3", "x.1"]
        for (rid, name) in names.enumerated() {
            harness.send(publisher, #"{"op":"pub","ch":"\#(name)","data":1,"rid":\#(rid)}"#)
        }
        let receipts = harness.frames(publisher).compactMap { $0["seq"] as? Int }
        #expect(receipts == [1, 1, 1, 2, 1, 2, 2, 3], "each channel counts its own seq")
        let events = harness.frames(subscriber).map { "\($0["event"] ?? "?")/\($0["seq"] ?? "?")" }
        #expect(events == ["x.1/1", "x.22/1", "x.3/1", "x.1/2", "x.333/1", "x.22/2", "x.3/2", "x.1/3"])
        for bad in ["x.*", "x..1", "x.>", ".x", "x.1 "] {
            harness.send(publisher, #"{"op":"pub","ch":"\#(bad)","data":1,"rid":9}"#)
            #expect(harness.frames(publisher).first?["error"] as? String == "bad_channel", "\(bad)")
        }
    }
}
