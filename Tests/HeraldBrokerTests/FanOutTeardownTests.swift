import Testing
import HeraldBroker

/// Sessions torn down in the middle of a fan-out. Deliveries borrow each subscriber's session
/// (no retain or release per delivery), so these pin down what keeps a session alive while
/// the loop runs (the broker's sessions table, until `disconnect`) and what the rest of the
/// same fan-out does once a subscriber is kicked.
@Suite struct FanOutTeardownTests {
    /// A subscriber kicked as a slow consumer by the first of its two subscriptions on the
    /// channel: the second, later in the same fan-out, gets nothing; the subscriber between
    /// them still does; the kicked session outlives the fan-out with only the broker holding
    /// it and is freed by `disconnect`.
    @Test func slowConsumerKickedMidFanOutLivesUntilDisconnect() {
        let harness = BrokerHarness(BrokerConfig(maxPending: 1000))
        weak var slow: Session?
        do {
            let session = harness.connect()
            harness.subscribe(session, #""ch":"t","sub":"first""#)
            slow = session
        }
        let fast = harness.connect()
        harness.subscribe(fast, #""ch":"t""#)
        if let slow { harness.subscribe(slow, #""ch":"t","sub":"second""#) }
        let publisher = harness.connect()
        let payload = String(repeating: "x", count: 300)

        harness.send(publisher, #"{"op":"pub","ch":"t","data":"\#(payload)","rid":1}"#)
        #expect(harness.frames(publisher).first?["receivers"] as? Int == 3)
        harness.send(publisher, #"{"op":"pub","ch":"t","data":"\#(payload)","rid":2}"#)
        #expect(harness.frames(publisher).first?["receivers"] as? Int == 1,
                "only the subscriber between the kicked session's two subscriptions")

        #expect(harness.frames(fast).compactMap { $0["seq"] as? Int } == [1, 2])
        #expect(slow != nil, "the sessions table keeps a kicked session until disconnect")
        do {
            guard let kicked = slow else { return }
            #expect(kicked.closeAfterFlush)
            let left = harness.frames(kicked)
            #expect(left.count == 1 && left.first?["error"] as? String == "slow_consumer",
                    "its queued events are gone and its second subscription got nothing more")
            var closing: [Session] = []
            harness.broker.drainDirty { if $0.closeAfterFlush { closing.append($0) } }
            #expect(closing.count == 1 && closing.first === kicked)
            for session in closing { harness.broker.disconnect(session) }
        }
        #expect(slow == nil, "disconnect lets go of the last reference")

        harness.send(publisher, #"{"op":"pub","ch":"t","data":1,"rid":3}"#)
        #expect(harness.frames(publisher).first?["receivers"] as? Int == 1)
        #expect(harness.frames(fast).compactMap { $0["seq"] as? Int } == [3])
    }

    /// Channels deliver to a plain subscription from their cached targets without reading
    /// the subscription (`FastTarget.plainSession`). A subscriber that disconnects with more
    /// subscriptions than are unindexed inline leaves the rest in the index until the
    /// teardown reaches them: no channel that cached one of them may deliver to it meanwhile
    /// (a stale cache would count it as a receiver and queue into a closed session), and the
    /// session is freed once the teardown is done.
    @Test func channelsThatCachedAPlainSubscriberNeverDeliverToItAfterItDisconnects() {
        let harness = BrokerHarness(BrokerConfig())
        let stays = harness.connect()
        let publisher = harness.connect()
        harness.subscribe(stays, #""ch":"c.>""#)
        let channels = 1_000  // twice what `disconnect` unindexes inline (`Broker.inlineUnindexing`)
        weak var gone: Session?
        do {
            let leaving = harness.connect()
            for i in 0..<channels { harness.subscribe(leaving, #""ch":"c.\#(i)""#) }
            gone = leaving
            for i in 0..<channels {
                harness.send(publisher, #"{"op":"pub","ch":"c.\#(i)","data":1,"rid":\#(i)}"#)
                #expect(harness.frames(publisher).first?["receivers"] as? Int == 2)
            }
            #expect(harness.frames(leaving).count == channels)
            harness.broker.disconnect(leaving)
        }
        #expect(harness.broker.hasDeferredWork, "half of its subscriptions wait for the teardown")
        for i in 0..<channels {
            harness.send(publisher, #"{"op":"pub","ch":"c.\#(i)","data":2,"rid":\#(i)}"#)
            #expect(harness.frames(publisher).first?["receivers"] as? Int == 1)
        }
        #expect(harness.frames(stays).count == 2 * channels)
        while harness.broker.hasDeferredWork { harness.broker.continueDeferredWork(isOverBudget: { false }) }
        harness.broker.drainDirty { _ in }
        #expect(gone == nil, "the teardown lets go of the session")
    }

    /// A queue group whose next member belongs to a session kicked earlier in the same
    /// fan-out (by its plain subscription): the event goes to the other member.
    @Test func groupSkipsAMemberWhoseSessionWasKickedInTheSameFanOut() {
        let harness = BrokerHarness(BrokerConfig(maxPending: 1000))
        let slow = harness.connect()
        let fast = harness.connect()
        let publisher = harness.connect()
        harness.subscribe(slow, #""ch":"t","sub":"plain""#)
        harness.subscribe(slow, #""ch":"t","group":"g""#)
        harness.subscribe(fast, #""ch":"t","group":"g""#)
        let payload = String(repeating: "x", count: 200)

        var receivers: [Int] = []
        var groupEvents = 0
        for rid in 1...3 {
            harness.send(publisher, #"{"op":"pub","ch":"t","data":"\#(payload)","rid":\#(rid)}"#)
            receivers.append(harness.frames(publisher).first?["receivers"] as? Int ?? -1)
            groupEvents += harness.frames(fast).count
        }
        // 1: plain + slow's member; 2: plain + fast's member; 3: plain overflows, so slow
        // is closed before the group is served, and fast's member takes its turn.
        #expect(receivers == [2, 2, 1])
        #expect(groupEvents == 2)
        #expect(slow.closeAfterFlush)
        #expect(harness.frames(slow).map { $0["error"] as? String } == ["slow_consumer"])
    }

    /// A `max:1` subscription ended by its own delivery, first in the fan-out: the rest of
    /// the fan-out goes on, the same session's other subscription included.
    @Test func maxEndingMidFanOutLeavesTheRestDelivered() {
        let harness = BrokerHarness()
        let once = harness.connect()
        let other = harness.connect()
        let publisher = harness.connect()
        harness.subscribe(once, #""ch":"t","sub":"once","max":1"#)
        harness.subscribe(other, #""ch":"t""#)
        harness.subscribe(once, #""ch":"t","sub":"always""#)

        harness.send(publisher, #"{"op":"pub","ch":"t","data":1,"rid":1}"#)
        harness.send(publisher, #"{"op":"pub","ch":"t","data":2,"rid":2}"#)
        #expect(harness.frames(publisher).compactMap { $0["receivers"] as? Int } == [3, 2])
        let frames = harness.frames(once)
        #expect(frames.map { $0["sub"] as? String } == ["once", "always", "always"])
        #expect(frames.first?["last"] as? Bool == true)
        #expect(harness.frames(other).compactMap { $0["seq"] as? Int } == [1, 2])
    }
}
