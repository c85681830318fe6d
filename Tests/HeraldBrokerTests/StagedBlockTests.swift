import Foundation
@testable import HeraldBroker
import Testing

/// A plain connection on one loop writes its session's staging block as it is when the
/// session has nothing but events to send (`Session.takeStaged(swappingWith:)`): the two
/// blocks take turns, nothing is copied, and every other case goes the old way, in order.
@Suite struct StagedBlockTests {
    /// What the server does under the lock (`Connection.takeQueued`): the block when it can,
    /// the queue otherwise. Returns the bytes taken and which way they came.
    private func take(_ session: Session, block: inout OutputBlock, spare: inout [UInt8]) -> (bytes: [UInt8], wasBlock: Bool) {
        block.removeAll()
        if session.takeStaged(swappingWith: &block) { return (Array(block.bytes), true) }
        session.takeOutbound(into: &spare)
        return (spare, false)
    }

    private func eventSubscriber(_ harness: BrokerHarness) -> Session {
        let subscriber = harness.connect()
        subscriber.takesStagedBlocks = true
        harness.subscribe(subscriber, #""ch":"s.t","sub":"a""#)
        return subscriber
    }

    private func parse(_ bytes: [UInt8]) -> [[String: Any]] {
        String(decoding: bytes, as: UTF8.self).split(separator: "\n").map { line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]) ?? ["unparsable": String(line)]
        }
    }

    @Test func theBlocksTakeTurnsWithoutACopyWhileOnlyEventsAreSent() {
        let harness = BrokerHarness()
        let subscriber = eventSubscriber(harness)
        let publisher = harness.connect()
        var block = OutputBlock()
        var spare: [UInt8] = []
        var seen: [Int] = []
        var bases: [UnsafeMutableRawPointer?] = []
        for round in 0..<4 {
            for _ in 0..<50 { harness.send(publisher, #"{"op":"pub","ch":"s.t","data":"\#(round)"}"#) }
            let (bytes, wasBlock) = take(subscriber, block: &block, spare: &spare)
            #expect(wasBlock)
            bases.append(block.base)
            seen += parse(bytes).compactMap { $0["seq"] as? Int }
        }
        #expect(seen == Array(1...200))
        // Two blocks, alternating: the third take hands back the first one's memory.
        #expect(bases[0] != nil && bases[0] != bases[1])
        #expect(bases[2] == bases[0] && bases[3] == bases[1])
        #expect(subscriber.hasNoOutbound)
        block.release()
    }

    @Test func anAnswerBetweenEventsSendsThemTheOldWayInOrderThenBlocksResume() {
        let harness = BrokerHarness()
        let subscriber = eventSubscriber(harness)
        let publisher = harness.connect()
        var block = OutputBlock()
        var spare: [UInt8] = []
        harness.send(publisher, #"{"op":"pub","ch":"s.t","data":1}"#)
        harness.send(subscriber, #"{"op":"ping","rid":7}"#)
        harness.send(publisher, #"{"op":"pub","ch":"s.t","data":2}"#)
        let mixed = take(subscriber, block: &block, spare: &spare)
        #expect(!mixed.wasBlock)
        let frames = parse(mixed.bytes)
        #expect(frames.count == 3)
        #expect(frames[0]["data"] as? Int == 1 && frames[1]["rid"] as? Int == 7 && frames[2]["data"] as? Int == 2)
        harness.send(publisher, #"{"op":"pub","ch":"s.t","data":3}"#)
        let events = take(subscriber, block: &block, spare: &spare)
        #expect(events.wasBlock)
        #expect(parse(events.bytes).map { $0["data"] as? Int } == [3])
        block.release()
    }

    /// Random event sizes up to 20 KiB (around the old 512-byte limit, the 1 KiB first
    /// block and many doublings), answers in between, and takes at random points: what
    /// comes out, either way, is every frame whole and in order.
    @Test(arguments: [true, false])
    func randomEventsAnswersAndTakesComeOutWholeAndInOrder(takesBlocks: Bool) {
        let harness = BrokerHarness(BrokerConfig(maxPending: 64 << 20))
        let subscriber = harness.connect()
        subscriber.takesStagedBlocks = takesBlocks
        harness.subscribe(subscriber, #""ch":"s.t","sub":"a""#)
        let publisher = harness.connect()
        var generator = SystemRandomNumberGenerator()
        var block = OutputBlock()
        var spare: [UInt8] = []
        var expected: [String] = []
        var received: [String] = []
        var blockTakes = 0
        for round in 0..<2_000 {
            let size = Int.random(in: 0...20_000, using: &generator) >> Int.random(in: 0...8, using: &generator)
            harness.send(publisher, #"{"op":"pub","ch":"s.t","data":"\#(String(repeating: "x", count: size))"}"#)
            expected.append("event \(size)")
            if Int.random(in: 0..<25, using: &generator) == 0 {
                harness.send(subscriber, #"{"op":"ping","rid":\#(round)}"#)
                expected.append("pong \(round)")
            }
            if Int.random(in: 0..<10, using: &generator) == 0 || round == 1_999 {
                let taken = take(subscriber, block: &block, spare: &spare)
                if taken.wasBlock { blockTakes += 1 }
                received += parse(taken.bytes).map { frame in
                    if let data = frame["data"] as? String { return "event \(data.count)" }
                    if let rid = frame["rid"] as? Int { return "pong \(rid)" }
                    return "other \(frame)"
                }
            }
        }
        #expect(received == expected)
        #expect(subscriber.hasNoOutbound)
        #expect(takesBlocks ? blockTakes > 0 : blockTakes == 0)
        block.release()
    }

    @Test func maxPendingBoundsTheGrowingBlock() {
        let harness = BrokerHarness(BrokerConfig(maxPending: 100_000, overflow: .drop))
        let subscriber = eventSubscriber(harness)
        let publisher = harness.connect()
        let kilobyte = String(repeating: "y", count: 1_000)
        for _ in 0..<1_000 { harness.send(publisher, #"{"op":"pub","ch":"s.t","data":"\#(kilobyte)"}"#) }
        #expect(subscriber.pendingBytes <= 100_000)
        #expect(subscriber.pendingBytes > 90_000)
        #expect(subscriber.outboundCapacity <= 100_000)
    }

    @Test func aLargeIdleBlockIsGivenBackAndTheNextEventStartsSmall() {
        let harness = BrokerHarness(BrokerConfig(maxPending: 64 << 20))
        let subscriber = eventSubscriber(harness)
        let publisher = harness.connect()
        let large = String(repeating: "z", count: 16_000)
        for _ in 0..<200 { harness.send(publisher, #"{"op":"pub","ch":"s.t","data":"\#(large)"}"#) }
        #expect(subscriber.outboundCapacity > 1 << 20)
        // Not while anything is staged.
        subscriber.shrinkOutboundIfIdle(above: 1 << 20)
        #expect(subscriber.outboundCapacity > 1 << 20)
        var spare: [UInt8] = []
        subscriber.takeOutbound(into: &spare)
        #expect(parse(spare).count == 200)
        subscriber.shrinkOutboundIfIdle(above: 1 << 20)
        spare = []
        #expect(subscriber.outboundCapacity == 0)
        harness.send(publisher, #"{"op":"pub","ch":"s.t","data":1}"#)
        #expect(subscriber.outboundCapacity == OutputBlock.minimumCapacity)
    }

    @Test func aSlowConsumerCutOffGivesItsGrownBlockBack() {
        let harness = BrokerHarness(BrokerConfig(maxPending: 2_000_000))
        let subscriber = eventSubscriber(harness)
        let publisher = harness.connect()
        let kilobyte = String(repeating: "v", count: 1_000)
        for _ in 0..<1_500 { harness.send(publisher, #"{"op":"pub","ch":"s.t","data":"\#(kilobyte)"}"#) }
        #expect(subscriber.outboundCapacity > 1 << 20)
        for _ in 0..<600 { harness.send(publisher, #"{"op":"pub","ch":"s.t","data":"\#(kilobyte)"}"#) }
        // Only the error frame is left, in a queue of its own size.
        #expect(subscriber.outboundCapacity < 4_096)
        let frames = harness.frames(subscriber)
        #expect(frames.count == 1 && frames.first?["error"] as? String == "slow_consumer")
    }

    @Test func withoutBlockTakingLargeFramesSkipTheBlock() {
        let harness = BrokerHarness()
        let subscriber = harness.connect()
        harness.subscribe(subscriber, #""ch":"s.t","sub":"a""#)
        let publisher = harness.connect()
        harness.send(publisher, #"{"op":"pub","ch":"s.t","data":1}"#)
        harness.send(publisher, #"{"op":"pub","ch":"s.t","data":"\#(String(repeating: "w", count: 5_000))"}"#)
        // The small frame was moved into the queue and the large one appended after it; the
        // block never grew past its first size.
        #expect(subscriber.staging.capacity == OutputBlock.minimumCapacity)
        #expect(subscriber.stagedCount == 0)
        #expect(harness.frames(subscriber).compactMap { $0["seq"] as? Int } == [1, 2])
    }
}
