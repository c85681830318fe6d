import Foundation
import Testing
import HeraldBroker

@Suite struct FlowControlTests {
    @Test func silentPeerIsPingedThenClosed() {
        let harness = BrokerHarness(BrokerConfig(heartbeatMs: 100))
        let s = harness.connect()
        harness.now = 99
        #expect(harness.broker.tick(now: harness.now).isEmpty)
        #expect(harness.lines(s).isEmpty)
        harness.now = 100
        _ = harness.broker.tick(now: harness.now)
        #expect(harness.frames(s).first?["ping"] as? Int == 1_700_000_000_000)
        harness.now = 250
        _ = harness.broker.tick(now: harness.now)
        #expect(harness.lines(s).isEmpty, "one ping per silence")
        harness.now = 300
        _ = harness.broker.tick(now: harness.now)
        #expect(harness.frames(s).first?["error"] as? String == "timeout")
        #expect(s.closeAfterFlush)
    }

    @Test func trafficKeepsAPeerAlive() {
        let harness = BrokerHarness(BrokerConfig(heartbeatMs: 100))
        let s = harness.connect()
        for step in 1...10 {
            harness.now = step * 90
            harness.broker.heard(from: s, now: harness.now)
            _ = harness.broker.tick(now: harness.now)
        }
        #expect(harness.lines(s).isEmpty)
        #expect(!s.closeAfterFlush)
    }

    /// Issue 29: a peer the server stopped reading for cluster backpressure is not silent,
    /// it is waiting; its clock restarts when the server reads it again (`heard`).
    @Test func aPeerNotReadForBackpressureIsNeitherPingedNorTimedOut() {
        let harness = BrokerHarness(BrokerConfig(heartbeatMs: 100))
        let s = harness.connect()
        s.isReadPaused = true
        harness.now = 1_000
        _ = harness.broker.tick(now: harness.now)
        #expect(harness.lines(s).isEmpty, "no ping")
        #expect(!s.closeAfterFlush, "no timeout")
        s.isReadPaused = false
        harness.broker.heard(from: s, now: harness.now)
        harness.now = 1_099
        _ = harness.broker.tick(now: harness.now)
        #expect(harness.lines(s).isEmpty)
        harness.now = 1_100
        _ = harness.broker.tick(now: harness.now)
        #expect(harness.frames(s).first?["ping"] != nil, "pinged after a heartbeat of silence since it is read again")
    }

    @Test func slowConsumerIsDisconnectedAndPublisherUnaffected() {
        let harness = BrokerHarness(BrokerConfig(maxPending: 1000))
        let slow = harness.connect()
        let fast = harness.connect()
        let publisher = harness.connect()
        harness.subscribe(slow, #""ch":"t""#)
        harness.subscribe(fast, #""ch":"t""#)
        let payload = String(repeating: "x", count: 100)
        var receipts: [Int] = []
        for _ in 0..<20 {
            harness.send(publisher, #"{"op":"pub","ch":"t","data":"\#(payload)","rid":1}"#)
            receipts.append(harness.frames(publisher).first?["receivers"] as? Int ?? -1)
            _ = harness.lines(fast)  // the fast consumer keeps up
        }
        let slowFrames = harness.frames(slow)
        #expect(slowFrames.last?["error"] as? String == "slow_consumer")
        #expect(slowFrames.count == 1, "queued events are discarded, the error frame stays")
        #expect(slow.closeAfterFlush)
        #expect(receipts.allSatisfy { $0 >= 1 })
        #expect(receipts.last == 1)
        #expect(harness.broker.stats.slowConsumers == 1)
    }

    @Test func dropPolicySkipsEventsAndReportsTheCount() {
        let harness = BrokerHarness(BrokerConfig(maxPending: 400, overflow: .drop))
        let slow = harness.connect()
        harness.subscribe(slow, #""ch":"t""#)
        let payload = String(repeating: "x", count: 100)
        for n in 0..<10 { harness.send(slow, #"{"op":"pub","ch":"t","data":"\#(payload)","n":\#(n)}"#) }
        let first = harness.frames(slow)
        #expect(first.count < 10)
        #expect(first.allSatisfy { $0["dropped"] == nil })
        let lost = 10 - first.count
        harness.send(slow, #"{"op":"pub","ch":"t","data":1}"#)
        let next = harness.frames(slow)
        #expect(next.first?["dropped"] as? Int == lost)
        #expect(harness.broker.stats.dropped == lost)
        #expect(!slow.closeAfterFlush)
    }

    @Test func requestsNeverReadAreBoundedToo() {
        let harness = BrokerHarness(BrokerConfig(maxPending: 500, overflow: .drop))
        let s = harness.connect()
        for _ in 0..<100 {
            var bytes = Array(#"{"op":"ping"}"#.utf8)
            bytes.withUnsafeMutableBytes { harness.broker.handleLine(UnsafeRawBufferPointer($0), from: s, now: 0) }
        }
        #expect(s.pendingBytes < 700)
        #expect(s.closeAfterFlush)
    }

    @Test func shutdownTellsEveryClient() {
        let harness = BrokerHarness()
        let a = harness.connect()
        let b = harness.connect()
        harness.broker.shutdown(now: 0)
        #expect(harness.frames(a).first?["error"] as? String == "shutting_down")
        #expect(harness.frames(b).first?["error"] as? String == "shutting_down")
        #expect(a.closeAfterFlush && b.closeAfterFlush)
    }

    @Test func closingSessionIsDroppedAfterGracePeriod() {
        let harness = BrokerHarness()
        let s = harness.connect()
        harness.broker.shutdown(now: 0)
        #expect(harness.broker.tick(now: 1999, closeGraceMs: 2000).isEmpty)
        #expect(harness.broker.tick(now: 2000, closeGraceMs: 2000).first === s)
    }
}
