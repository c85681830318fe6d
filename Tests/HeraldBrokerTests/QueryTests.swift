import Foundation
import Testing
import HeraldBroker

@Suite struct QueryTests {
    @Test func pingAnswersWithTheServerClockAndRid() {
        let harness = BrokerHarness()
        let s = harness.connect()
        let pong = harness.request(s, #"{"op":"ping","rid":5}"#)
        #expect(pong["pong"] as? Int == 1_700_000_000_000)
        #expect(pong["rid"] as? Int == 5)
    }

    @Test func pongIsSilentUnlessItCarriesRid() {
        let harness = BrokerHarness()
        let s = harness.connect()
        harness.send(s, #"{"op":"pong"}"#)
        #expect(harness.lines(s).isEmpty)
        #expect(harness.request(s, #"{"op":"pong","rid":1}"#)["ok"] as? String == "pong")
    }

    @Test func helloNamesTheClient() {
        let harness = BrokerHarness()
        let s = harness.connect()
        let ok = harness.request(s, #"{"op":"hello","name":"menu-app","rid":"h"}"#)
        #expect(ok["ok"] as? String == "hello")
        #expect(ok["client"] as? String == "c1")
        #expect(ok["rid"] as? String == "h")
        #expect(s.name == Array("menu-app".utf8))
    }

    @Test func statsCountsConnectionsSubscriptionsAndMessages() {
        let harness = BrokerHarness()
        let a = harness.connect()
        let b = harness.connect()
        harness.subscribe(a, #""ch":"t""#)
        harness.subscribe(b, #""ch":"t""#)
        harness.send(a, #"{"op":"pub","ch":"t"}"#)
        _ = harness.frames(a)
        harness.now = 2500
        let stats = harness.request(a, #"{"op":"stats"}"#)
        #expect(stats["ok"] as? String == "stats")
        #expect(stats["connections"] as? Int == 2)
        #expect(stats["subscriptions"] as? Int == 2)
        #expect(stats["channels"] as? Int == 1)
        #expect(stats["msgs_out"] as? Int == 2)
        #expect(stats["msgs_in"] as? Int == 4)
        #expect(stats["uptime_ms"] as? Int == 2500)
    }

    @Test func channelsListsKnownChannelsWithFilter() {
        let harness = BrokerHarness()
        let s = harness.connect()
        harness.subscribe(s, #""ch":"app.a""#)
        harness.subscribe(s, #""ch":"app.*""#)
        harness.send(s, #"{"op":"pub","ch":"other"}"#)
        harness.send(s, #"{"op":"pub","ch":"app.b"}"#)
        _ = harness.frames(s)
        let all = harness.request(s, #"{"op":"channels"}"#)["channels"] as? [[String: Any]] ?? []
        #expect(all.compactMap { $0["ch"] as? String } == ["app.a", "app.b", "other"])
        #expect(all.first?["subs"] as? Int == 2)
        #expect(all.last?["seq"] as? Int == 1)
        #expect(all.first?["has_value"] as? Bool == false)
        #expect(all.first.map { $0["owner"] is NSNull } == true)
        let filtered = harness.request(s, #"{"op":"channels","ch":"app.*"}"#)["channels"] as? [[String: Any]] ?? []
        #expect(filtered.compactMap { $0["ch"] as? String } == ["app.a", "app.b"])
    }

    @Test func subsListsOwnSubscriptionsWithOptions() {
        let harness = BrokerHarness()
        let s = harness.connect()
        harness.subscribe(s, #""ch":"a","sub":"first""#)
        harness.subscribe(s, #""ch":"b.>","sub":"second","group":"g","max":4,"args":[1]"#)
        let subs = harness.request(s, #"{"op":"subs"}"#)["subs"] as? [[String: Any]] ?? []
        #expect(subs.compactMap { $0["sub"] as? String } == ["first", "second"])
        #expect(subs.last?["group"] as? String == "g")
        #expect(subs.last?["remaining"] as? Int == 4)
        #expect(subs.last?["args"] as? [Int] == [1])
    }
}
