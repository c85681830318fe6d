import Foundation
import Testing
import HeraldBroker

/// `set`, `get`, `del`, `touch` and the events they send (issue 6).
@Suite struct RetainedValueTests {
    @Test func setThenGetReturnsTheValueBytesAndRev() {
        let harness = BrokerHarness()
        let client = harness.connect()
        harness.send(client, #"{"op":"set","ch":"app.theme","value": {"mode" : "dark"},"rid":1}"#)
        #expect(harness.lines(client) == [#"{"ok":"set","rid":1,"rev":1}"#])
        harness.send(client, #"{"op":"get","ch":"app.theme"}"#)
        #expect(harness.lines(client) == [#"{"ok":"get","ch":"app.theme","rev":1,"value":{"mode" : "dark"}}"#])
    }

    @Test func getOfAChannelThatNeverHadStateIsNullWithRevZero() {
        let harness = BrokerHarness()
        let client = harness.connect()
        let answer = harness.request(client, #"{"op":"get","ch":"nothing.here"}"#)
        #expect(answer["rev"] as? Int == 0)
        #expect(answer["value"] is NSNull)
    }

    @Test func everyChangeRaisesRevAndDelKeepsIt() {
        let harness = BrokerHarness()
        let client = harness.connect()
        #expect(harness.request(client, #"{"op":"set","ch":"a","value":1}"#)["rev"] as? Int == 1)
        #expect(harness.request(client, #"{"op":"set","ch":"a","value":2}"#)["rev"] as? Int == 2)
        #expect(harness.request(client, #"{"op":"del","ch":"a"}"#)["rev"] as? Int == 3)
        let after = harness.request(client, #"{"op":"get","ch":"a"}"#)
        #expect(after["rev"] as? Int == 3)
        #expect(after["value"] is NSNull)
        #expect(harness.request(client, #"{"op":"del","ch":"a"}"#)["rev"] as? Int == 3, "nothing to clear: rev stays")
        #expect(harness.request(client, #"{"op":"set","ch":"a","value":"x"}"#)["rev"] as? Int == 4)
    }

    @Test func ifRevMismatchIsConflictCarryingTheCurrentRev() {
        let harness = BrokerHarness()
        let client = harness.connect()
        _ = harness.request(client, #"{"op":"set","ch":"a","value":1}"#)
        let refused = harness.request(client, #"{"op":"set","ch":"a","value":2,"if_rev":0,"rid":"r"}"#)
        #expect(refused["error"] as? String == "conflict")
        #expect(refused["rev"] as? Int == 1)
        #expect(refused["rid"] as? String == "r")
        #expect(refused["op"] as? String == "set")
        #expect(harness.request(client, #"{"op":"get","ch":"a"}"#)["value"] as? Int == 1, "nothing applied")
        #expect(harness.request(client, #"{"op":"set","ch":"a","value":2,"if_rev":1}"#)["rev"] as? Int == 2)
        #expect(harness.request(client, #"{"op":"set","ch":"fresh","value":2,"if_rev":0}"#)["rev"] as? Int == 1)
    }

    @Test func setSendsAnEventWithKindRevAndTheValueLast() {
        let harness = BrokerHarness()
        let subscriber = harness.connect()
        let writer = harness.connect()
        harness.subscribe(subscriber, #""ch":"app.*","sub":"w""#)
        harness.send(writer, #"{"op":"set","ch":"app.theme","value":[1, "two"]}"#)
        #expect(harness.lines(subscriber)
            == [#"{"event":"app.theme","sub":"w","seq":1,"from":"c2","kind":"set","rev":1,"value":[1, "two"]}"#])
        harness.send(writer, #"{"op":"del","ch":"app.theme"}"#)
        #expect(harness.lines(subscriber) == [#"{"event":"app.theme","sub":"w","seq":2,"from":"c2","kind":"del","rev":2}"#])
    }

    @Test func touchReNotifiesWithoutChangingRev() {
        let harness = BrokerHarness()
        let subscriber = harness.connect()
        let writer = harness.connect()
        _ = harness.request(writer, #"{"op":"set","ch":"v","value":"same"}"#)
        harness.subscribe(subscriber, #""ch":"v""#)
        #expect(harness.request(writer, #"{"op":"touch","ch":"v"}"#)["rev"] as? Int == 1)
        #expect(harness.lines(subscriber) == [#"{"event":"v","sub":"s1","seq":2,"from":"c2","kind":"touch","rev":1,"value":"same"}"#])
        #expect(harness.request(writer, #"{"op":"touch","ch":"unset"}"#)["error"] as? String == "not_found")
    }

    @Test func pubAndStateChangesShareTheChannelSeq() {
        let harness = BrokerHarness()
        let client = harness.connect()
        harness.subscribe(client, #""ch":"c""#)
        harness.send(client, #"{"op":"pub","ch":"c","data":1}"#)
        harness.send(client, #"{"op":"set","ch":"c","value":1}"#)
        harness.send(client, #"{"op":"pub","ch":"c","data":2}"#)
        let seqs = harness.frames(client).compactMap { $0["seq"] as? Int }
        #expect(seqs == [1, 2, 3])
    }

    @Test func nullIsAValueButAMissingValueIsRefused() {
        let harness = BrokerHarness()
        let client = harness.connect()
        #expect(harness.request(client, #"{"op":"set","ch":"n","value":null}"#)["rev"] as? Int == 1)
        #expect(harness.request(client, #"{"op":"set","ch":"n"}"#)["error"] as? String == "missing_field")
    }

    @Test(arguments: [
        (#"{"op":"set","value":1}"#, "missing_field"),
        (#"{"op":"set","ch":"a.*","value":1}"#, "bad_channel"),
        (#"{"op":"set","ch":"$sys.x","value":1}"#, "forbidden"),
        (#"{"op":"set","ch":"a","value":1,"if_rev":"1"}"#, "bad_field"),
        (#"{"op":"set","ch":"a","value":1,"if_rev":-1}"#, "bad_field"),
        (#"{"op":"get"}"#, "missing_field"),
        (#"{"op":"get","ch":"a.>"}"#, "bad_channel"),
        (#"{"op":"del","ch":"a b"}"#, "bad_channel"),
        (#"{"op":"touch","ch":"never.set"}"#, "not_found"),
    ])
    func badStateRequestGetsErrorCode(line: String, code: String) {
        let harness = BrokerHarness()
        let client = harness.connect()
        #expect(harness.request(client, line)["error"] as? String == code, "\(line)")
    }

    @Test func channelsListsHasValue() {
        let harness = BrokerHarness()
        let client = harness.connect()
        _ = harness.request(client, #"{"op":"set","ch":"k","value":true}"#)
        let listed = harness.request(client, #"{"op":"channels"}"#)["channels"] as? [[String: Any]]
        #expect(listed?.first?["has_value"] as? Bool == true)
    }
}
