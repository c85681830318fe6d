import Testing
@testable import HeraldBroker

/// Pacing (`Broker+Pacing`): an event that leaves a subscriber past `pace_pending` names it,
/// so the server can stop reading the publisher until it caught up; a subscriber that does
/// not read is exempted after one pause, until it wrote half of its queue.
@Suite struct PacingTests {
    private func paced(_ bytes: Int = 16_384) -> BrokerHarness {
        var config = BrokerConfig(epoch: "e")
        config.pacePending = bytes
        return BrokerHarness(config)
    }

    private let payload = String(repeating: "p", count: 200)

    /// A paced broker with one subscriber on `fast` and a publisher.
    private func fastChannel() -> (harness: BrokerHarness, subscriber: Session, publisher: Session) {
        let harness = paced()
        let subscriber = harness.connect()
        let publisher = harness.connect()
        harness.subscribe(subscriber, #""ch":"fast""#)
        return (harness, subscriber, publisher)
    }

    /// `count` events of about 270 bytes on `fast`.
    private func publish(_ count: Int, on harness: BrokerHarness, from publisher: Session) {
        for _ in 0..<count { harness.send(publisher, #"{"op":"pub","ch":"fast","data":"\#(payload)"}"#) }
    }

    @Test func theEventThatPutsASubscriberPastPacePendingNamesItOnce() {
        let harness = paced()
        let subscriber = harness.connect()
        let publisher = harness.connect()
        harness.subscribe(subscriber, #""ch":"fast""#)
        var sent = 0
        while subscriber.pendingBytes <= 16_384 {
            #expect(harness.broker.takePacingSession() == nil, "under the bound after \(sent) events")
            harness.send(publisher, #"{"op":"pub","ch":"fast","data":"\#(payload)"}"#)
            sent += 1
        }
        #expect(sent > 50 && sent < 100, "about 16 KiB of 270-byte frames: \(sent)")
        #expect(harness.broker.takePacingSession() === subscriber)
        #expect(harness.broker.takePacingSession() == nil, "taking it forgets it")
        #expect(harness.broker.stats.paced == 1)
    }

    @Test func nothingIsNamedWithPacingOff() {
        let harness = BrokerHarness(BrokerConfig(epoch: "e"))
        let subscriber = harness.connect()
        let publisher = harness.connect()
        harness.subscribe(subscriber, #""ch":"fast""#)
        for _ in 0..<4_000 { harness.send(publisher, #"{"op":"pub","ch":"fast","data":"\#(payload)"}"#) }
        #expect(subscriber.pendingBytes > 1_000_000)
        #expect(harness.broker.takePacingSession() == nil)
        #expect(harness.broker.stats.paced == 0)
    }

    @Test func aPauseIsOverOnceTheSubscriberWroteHalfOrLeft() throws {
        let (harness, subscriber, publisher) = fastChannel()
        publish(100, on: harness, from: publisher)
        let behind = try #require(harness.broker.takePacingSession())
        #expect(!harness.broker.paceIsOver(for: behind), "27 KB pending against 16 KiB")
        _ = harness.lines(subscriber)  // the server took and wrote everything
        #expect(harness.broker.paceIsOver(for: behind))
        publish(100, on: harness, from: publisher)
        #expect(!harness.broker.paceIsOver(for: behind))
        harness.broker.disconnect(subscriber)
        #expect(harness.broker.paceIsOver(for: behind), "a subscriber that left holds nobody")
    }

    @Test func aSubscriberWhosePauseTimedOutPacesNobodyUntilItCaughtUp() throws {
        let (harness, subscriber, publisher) = fastChannel()
        publish(100, on: harness, from: publisher)
        let behind = try #require(harness.broker.takePacingSession())
        harness.broker.paceTimedOut(for: behind)
        #expect(harness.broker.stats.paceTimeouts == 1)
        publish(1_000, on: harness, from: publisher)
        #expect(harness.broker.takePacingSession() == nil, "a subscriber that does not read holds publishers once")
        // Written down to half: it paces again.
        _ = harness.lines(subscriber)
        harness.broker.wrotePaced(subscriber)
        #expect(!subscriber.isPacingExempt)
        publish(100, on: harness, from: publisher)
        #expect(harness.broker.takePacingSession() === subscriber)
    }

    @Test func onlyTheFullestSubscriberIsNamedAndOthersNeverCount() {
        let harness = paced()
        let slow = harness.connect()
        let reader = harness.connect()
        let publisher = harness.connect()
        harness.subscribe(slow, #""ch":"fast""#)
        harness.subscribe(reader, #""ch":"fast""#)
        for _ in 0..<100 {
            publish(1, on: harness, from: publisher)
            _ = harness.lines(reader)
        }
        #expect(harness.broker.takePacingSession() === slow, "the one that reads is never named")
    }
}
