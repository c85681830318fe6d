import Testing
import HeraldBroker

/// A subscriber that never reads costs the daemon at most `max_pending` of queue, not the
/// twice as much that plain `Array` doubling would reserve (found by `scripts/fault nonreader`).
@Suite struct OutboundCapacityTests {
    /// Publishes `count` events of about `payload` bytes to `t` from a fresh publisher.
    private func flood(_ harness: BrokerHarness, count: Int, payload: Int) {
        let publisher = harness.connect()
        let data = String(repeating: "x", count: payload)
        for _ in 0..<count {
            harness.send(publisher, #"{"op":"pub","ch":"t","data":"\#(data)"}"#)
        }
    }

    @Test(arguments: [65_536, 100_000, 1 << 20])
    func queueOfAStuckSubscriberNeverReservesPastMaxPending(maxPending: Int) {
        let harness = BrokerHarness(BrokerConfig(maxPending: maxPending, overflow: .drop))
        let stuck = harness.connect()
        harness.subscribe(stuck, #""ch":"t""#)
        flood(harness, count: maxPending / 50, payload: 100)
        #expect(harness.broker.stats.dropped > 0, "the queue filled up")
        #expect(stuck.pendingBytes <= maxPending)
        // malloc may round a block up a little; doubling would have reached about 2 x maxPending
        #expect(stuck.outbound.capacity <= maxPending + 4096,
                "capacity \(stuck.outbound.capacity) for max_pending \(maxPending)")
    }

    @Test func bytesInFlightCountAgainstTheReservation() {
        let maxPending = 65_536
        let harness = BrokerHarness(BrokerConfig(maxPending: maxPending, overflow: .drop))
        let stuck = harness.connect()
        harness.subscribe(stuck, #""ch":"t""#)
        stuck.inFlight = 20_000  // as if the server had handed 20 kB to a write that never ends
        flood(harness, count: 2000, payload: 100)
        #expect(stuck.outbound.count <= maxPending - 20_000)
        #expect(stuck.outbound.capacity <= maxPending - 20_000 + 4096)
    }

    @Test func aSubscriberThatReadsKeepsGettingEverything() {
        let harness = BrokerHarness(BrokerConfig(maxPending: 65_536, overflow: .drop))
        let reader = harness.connect()
        harness.subscribe(reader, #""ch":"t""#)
        let publisher = harness.connect()
        var got = 0
        for n in 0..<3000 {
            harness.send(publisher, #"{"op":"pub","ch":"t","data":\#(n)}"#)
            if n % 100 == 99 { got += harness.lines(reader).count }
        }
        got += harness.lines(reader).count
        #expect(got == 3000)
        #expect(harness.broker.stats.dropped == 0)
    }
}
