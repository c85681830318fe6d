import HeraldBroker
import Testing

/// The index keeps a lone plain subscription on a channel without an entry object, and grows
/// it into one when a second subscriber, a group member or a removal comes along; deliveries
/// must not notice the difference.
@Suite struct SubscriptionIndexTests {
    private func received(_ harness: BrokerHarness, _ session: Session) -> [String] {
        harness.frames(session).compactMap { frame in
            guard frame["event"] != nil, let sub = frame["sub"] as? String else { return nil }
            return "\(sub):\(frame["data"] ?? "")"
        }
    }

    @Test func secondSubscriberOnALoneChannelGetsEventsInSubscriptionOrder() {
        let harness = BrokerHarness()
        let a = harness.connect(), b = harness.connect()
        harness.subscribe(a, #""ch":"x.y","sub":"a""#)
        harness.subscribe(b, #""ch":"x.y","sub":"b""#)
        harness.send(a, #"{"op":"pub","ch":"x.y","data":1}"#)
        #expect(received(harness, a) == ["a:1"])
        #expect(received(harness, b) == ["b:1"])
    }

    @Test func removingTheLoneSubscriberThenSubscribingAgainDelivers() {
        let harness = BrokerHarness()
        let s = harness.connect()
        harness.subscribe(s, #""ch":"x.y","sub":"first""#)
        harness.send(s, #"{"op":"unsub","sub":"first"}"#)
        harness.send(s, #"{"op":"pub","ch":"x.y","data":1}"#)
        harness.subscribe(s, #""ch":"x.y","sub":"second""#)
        harness.send(s, #"{"op":"pub","ch":"x.y","data":2}"#)
        #expect(received(harness, s) == ["second:2"])
    }

    @Test func grownEntryShrinksAndEmptiesAsSubscribersLeave() {
        let harness = BrokerHarness()
        let a = harness.connect(), b = harness.connect()
        harness.subscribe(a, #""ch":"x.y","sub":"a""#)
        harness.subscribe(b, #""ch":"x.y","sub":"b""#)
        harness.send(a, #"{"op":"unsub","sub":"a"}"#)
        harness.send(a, #"{"op":"pub","ch":"x.y","data":1}"#)
        harness.send(b, #"{"op":"unsub","sub":"b"}"#)
        harness.send(a, #"{"op":"pub","ch":"x.y","data":2}"#)
        harness.subscribe(a, #""ch":"x.y","sub":"again""#)
        harness.send(b, #"{"op":"pub","ch":"x.y","data":3}"#)
        #expect(received(harness, a) == ["again:3"])
        #expect(received(harness, b) == ["b:1"])
        let stats = harness.request(b, #"{"op":"stats"}"#)
        #expect(stats["subscriptions"] as? Int == 1)
    }

    @Test func groupMembersJoiningALonePlainSubscriberShareTheirEvents() {
        let harness = BrokerHarness()
        let plain = harness.connect(), m1 = harness.connect(), m2 = harness.connect()
        harness.subscribe(plain, #""ch":"work","sub":"all""#)
        harness.subscribe(m1, #""ch":"work","sub":"m","group":"g""#)
        harness.subscribe(m2, #""ch":"work","sub":"m","group":"g""#)
        for n in 0..<4 { harness.send(plain, #"{"op":"pub","ch":"work","data":\#(n)}"#) }
        #expect(received(harness, plain) == ["all:0", "all:1", "all:2", "all:3"])
        #expect(received(harness, m1) == ["m:0", "m:2"])
        #expect(received(harness, m2) == ["m:1", "m:3"])
    }

    @Test func leavingDoesNotRemoveAnotherConnectionsLoneSubscription() {
        let harness = BrokerHarness()
        let stays = harness.connect(), leaves = harness.connect()
        harness.subscribe(stays, #""ch":"x.y","sub":"s""#)
        harness.subscribe(leaves, #""ch":"x.z","sub":"s""#)
        harness.broker.disconnect(leaves)
        harness.send(stays, #"{"op":"pub","ch":"x.y","data":1}"#)
        #expect(received(harness, stays) == ["s:1"])
    }
}
