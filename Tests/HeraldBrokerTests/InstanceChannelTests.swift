import Foundation
import Testing
import HeraldBroker

/// `declare` / `remove` (PROTOCOL.md, "Instance channels").
@Suite struct InstanceChannelTests {
    @Test func ownerDisconnectNotifiesExactlyTheExactChannelSubscribers() {
        let harness = BrokerHarness()
        let owner = harness.connect()
        let exact = harness.connect()
        let wild = harness.connect()
        let other = harness.connect()
        #expect(harness.request(owner, #"{"op":"declare","ch":"car.42.moved"}"#)["ok"] as? String == "declare")
        harness.subscribe(exact, #""ch":"car.42.moved","sub":"s4""#)
        harness.subscribe(exact, #""ch":"car.42.moved","group":"g","sub":"g4""#)
        harness.subscribe(wild, #""ch":"car.*.moved","sub":"w""#)
        harness.subscribe(other, #""ch":"car.43.moved","sub":"o""#)
        harness.broker.disconnect(owner)
        #expect(harness.lines(exact) == [
            #"{"removed":"car.42.moved","sub":"s4"}"#, #"{"removed":"car.42.moved","sub":"g4"}"#,
        ])
        #expect(harness.frames(wild).isEmpty)
        #expect(harness.frames(other).isEmpty)
        let subs = harness.request(exact, #"{"op":"subs"}"#)["subs"] as? [[String: Any]]
        #expect(subs?.isEmpty == true, "the exact subscriptions are dropped")
        harness.send(other, #"{"op":"pub","ch":"car.42.moved"}"#)
        #expect(harness.frames(wild).compactMap { $0["sub"] as? String } == ["w"], "wildcard subscriptions stay")
        #expect(harness.request(other, #"{"op":"stats"}"#)["instance_channels"] as? Int == 0)
    }

    @Test func removeByNameAndAllRemovesOnlyOwnChannels() {
        let harness = BrokerHarness()
        let owner = harness.connect()
        let s = harness.connect()
        for name in ["a.1", "a.2", "a.3"] { _ = harness.request(owner, #"{"op":"declare","ch":"\#(name)"}"#) }
        harness.subscribe(s, #""ch":"a.1","sub":"one""#)
        harness.subscribe(s, #""ch":"a.3","sub":"three""#)
        let one = harness.request(owner, #"{"op":"remove","ch":"a.1","rid":5}"#)
        #expect(one["count"] as? Int == 1)
        #expect(one["rid"] as? Int == 5)
        #expect(harness.lines(s) == [#"{"removed":"a.1","sub":"one"}"#])
        #expect(harness.request(owner, #"{"op":"remove","all":true}"#)["count"] as? Int == 2)
        #expect(harness.lines(s) == [#"{"removed":"a.3","sub":"three"}"#])
        #expect(harness.request(owner, #"{"op":"remove","all":true}"#)["count"] as? Int == 0)
    }

    @Test func secondOwnerGetsConflictAndOthersCannotRemove() {
        let harness = BrokerHarness()
        let owner = harness.connect()
        let rival = harness.connect()
        _ = harness.request(owner, #"{"op":"declare","ch":"room.1"}"#)
        #expect(harness.request(owner, #"{"op":"declare","ch":"room.1"}"#)["ok"] as? String == "declare")
        #expect(harness.request(rival, #"{"op":"declare","ch":"room.1"}"#)["error"] as? String == "conflict")
        #expect(harness.request(rival, #"{"op":"remove","ch":"room.1"}"#)["error"] as? String == "forbidden")
        #expect(harness.request(rival, #"{"op":"remove","ch":"room.2"}"#)["error"] as? String == "not_found")
        harness.send(rival, #"{"op":"pub","ch":"room.1","rid":1}"#)
        #expect(harness.frames(rival).first?["ok"] as? String == "pub", "anyone may publish to an instance channel")
        harness.broker.disconnect(owner)
        #expect(harness.request(rival, #"{"op":"declare","ch":"room.1"}"#)["ok"] as? String == "declare",
                "the owner's disconnect frees the name")
    }

    @Test func channelsShowsTheOwnerAndRemovalForgetsTheChannel() {
        let harness = BrokerHarness()
        let owner = harness.connect()
        _ = harness.request(owner, #"{"op":"declare","ch":"car.1"}"#)
        harness.send(owner, #"{"op":"pub","ch":"car.1"}"#)
        let listed = harness.request(owner, #"{"op":"channels"}"#)["channels"] as? [[String: Any]] ?? []
        #expect(listed.first?["ch"] as? String == "car.1")
        #expect(listed.first?["owner"] as? String == "c1")
        _ = harness.request(owner, #"{"op":"remove","ch":"car.1"}"#)
        let after = harness.request(owner, #"{"op":"channels"}"#)["channels"] as? [[String: Any]] ?? []
        #expect(after.isEmpty)
        _ = harness.request(owner, #"{"op":"declare","ch":"car.1"}"#)
        harness.send(owner, #"{"op":"pub","ch":"car.1","rid":2}"#)
        #expect(harness.frames(owner).first?["seq"] as? Int == 1, "a removed channel's history went with it")
    }

    @Test(arguments: [
        (#"{"op":"declare"}"#, "missing_field"),
        (#"{"op":"declare","ch":"a.*"}"#, "bad_channel"),
        (#"{"op":"declare","ch":"$sys.mine"}"#, "forbidden"),
        (#"{"op":"remove"}"#, "missing_field"),
        (#"{"op":"remove","all":"yes"}"#, "bad_field"),
    ])
    func badInstanceRequestsAreRefused(line: String, code: String) {
        let harness = BrokerHarness()
        let s = harness.connect()
        #expect(harness.request(s, line)["error"] as? String == code, "\(line)")
    }
}
