import Foundation
@testable import HeraldBroker
import Testing

/// Small event frames are copied into a session's staging block and moved into its queue in
/// one append (`Session.appendEvent`); anything that reads or writes the queue moves them
/// first. Frames must come out whole and in the order they were produced, whatever mix of
/// staged events, large events and answers, across block boundaries, and `max_pending` must
/// see staged bytes at once.
@Suite struct EventStagingTests {
    @Test func stagedEventsLargeEventsAndAnswersKeepTheirOrderAcrossManyBlocks() throws {
        let harness = BrokerHarness()
        let subscriber = harness.connect()
        let publisher = harness.connect()
        harness.subscribe(subscriber, #""ch":"s.t","sub":"a""#)
        var expected: [String] = []
        // Sizes around the staged-frame limit and the block size, so frames end exactly at,
        // just before and just past a block's end, and some bypass the block.
        let sizes = [1, 10, 100, 300, 430, 440, 450, 460, 470, 480, 500, 600, 1000, 2000, 5]
        for round in 0..<400 {
            let size = sizes[round % sizes.count] + round % 7
            let payload = String(repeating: "x", count: size)
            harness.send(publisher, #"{"op":"pub","ch":"s.t","data":"\#(payload)"}"#)
            expected.append("event \(size)")
            if round % 37 == 0 {
                // An answer to the subscriber itself lands after the events before it.
                harness.send(subscriber, #"{"op":"ping","rid":\#(round)}"#)
                expected.append("pong \(round)")
            }
        }
        let frames = harness.frames(subscriber)
        let seen = frames.map { frame -> String in
            if let data = frame["data"] as? String, frame["event"] as? String == "s.t" { return "event \(data.count)" }
            if let rid = frame["rid"] as? Int { return "pong \(rid)" }
            return "other \(frame)"
        }
        #expect(seen == expected)
        #expect(frames.compactMap { $0["seq"] as? Int } == Array(1...400))
    }

    @Test func maxPendingCountsStagedBytesBeforeTheyMove() {
        let harness = BrokerHarness(BrokerConfig(maxPending: 2000, overflow: .drop))
        let subscriber = harness.connect()
        let publisher = harness.connect()
        harness.subscribe(subscriber, #""ch":"s.t","sub":"a""#)
        for _ in 0..<100 { harness.send(publisher, #"{"op":"pub","ch":"s.t","data":"0123456789"}"#) }
        #expect(subscriber.pendingBytes <= 2000)
        #expect(subscriber.pendingBytes > 2000 - 100)
        let frames = harness.frames(subscriber)
        let delivered = frames.filter { $0["event"] != nil }.count
        #expect(delivered > 0 && delivered < 100)
        // The next event after a drain tells how many were skipped.
        harness.send(publisher, #"{"op":"pub","ch":"s.t","data":"0123456789"}"#)
        let next = harness.frames(subscriber)
        #expect(next.first?["dropped"] as? Int == 100 - delivered)
    }

    @Test func aSlowConsumerCutOffWithStagedEventsGetsOnlyTheErrorFrame() {
        let harness = BrokerHarness(BrokerConfig(maxPending: 3000))
        let subscriber = harness.connect()
        let publisher = harness.connect()
        harness.subscribe(subscriber, #""ch":"s.t","sub":"a""#)
        for _ in 0..<100 { harness.send(publisher, #"{"op":"pub","ch":"s.t","data":"0123456789"}"#) }
        let frames = harness.frames(subscriber)
        #expect(frames.count == 1)
        #expect(frames.first?["error"] as? String == "slow_consumer")
        #expect(subscriber.pendingBytes == 0)
    }
}
