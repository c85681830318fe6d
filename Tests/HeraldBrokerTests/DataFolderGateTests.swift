import HeraldBroker
import Testing

/// A full data folder as the broker sees it (issue 13): refusals before anything changes,
/// held answers that end with `unavailable`, and `shutting_down` for them at a stop.
@Suite struct DataFolderGateTests {
    private func journaling(timeoutMs: Int = 1_000, queueBytes: Int = 1 << 20) -> BrokerHarness {
        var config = BrokerConfig(epoch: "e")
        config.journaling = true
        config.diskFullTimeoutMs = timeoutMs
        config.maxWriterQueueBytes = queueBytes
        return BrokerHarness(config)
    }

    @Test func aFaultRefusesChangesBeforeAnythingIsApplied() {
        let harness = journaling()
        let writer = harness.connect()
        let reader = harness.connect()
        harness.subscribe(reader, #""ch":"a""#)
        harness.broker.dataFolderReport(fault: "data folder full", writerBytes: 0, now: 0)
        let answer = harness.request(writer, #"{"op":"set","ch":"a","value":1,"rid":7}"#)
        #expect(answer["error"] as? String == "unavailable")
        #expect((answer["message"] as? String)?.hasPrefix("data folder full") == true)
        #expect(answer["rid"] as? Int == 7)
        #expect(harness.request(writer, #"{"op":"append","ch":"b","value":1}"#)["error"] as? String == "unavailable")
        #expect(!harness.broker.hasPendingRecords)
        #expect(harness.lines(reader).isEmpty, "no event for a refused change")
        #expect(harness.request(writer, #"{"op":"get","ch":"a"}"#)["rev"] as? Int == 0)
        harness.broker.dataFolderReport(fault: nil, writerBytes: 0, now: 0)
        harness.send(writer, #"{"op":"set","ch":"a","value":1}"#)
        #expect(harness.broker.hasPendingRecords, "changes resume when the fault clears")
    }

    @Test func aHeldAnswerBecomesUnavailableAtItsDeadlineKeepingRidAndRev() {
        let harness = journaling(timeoutMs: 1_000)
        let writer = harness.connect()
        harness.send(writer, #"{"op":"set","ch":"a","value":1,"rid":1}"#)
        harness.send(writer, #"{"op":"ping","rid":2}"#)
        harness.broker.drainRecords { _, _ in }
        harness.broker.dataFolderReport(fault: "data folder full", writerBytes: 30, now: 999)
        #expect(harness.lines(writer).isEmpty, "still within disk_full_timeout_ms")
        harness.broker.dataFolderReport(fault: "data folder full", writerBytes: 30, now: 1_000)
        let frames = harness.frames(writer)
        #expect(frames.count == 2)
        #expect(frames.first?["error"] as? String == "unavailable")
        #expect(frames.first?["op"] as? String == "set")
        #expect(frames.first?["rid"] as? Int == 1)
        #expect(frames.first?["rev"] as? Int == 1)
        #expect(frames.last?["pong"] != nil)
        // The record is still the writer's: when it is written later nothing is sent twice.
        harness.broker.durable(upTo: 1)
        #expect(harness.lines(writer).isEmpty)
        #expect(harness.broker.audit().problems.isEmpty, "\(harness.broker.audit().problems)")
    }

    @Test func theTickExpiresHeldAnswersWithoutAWriterReport() {
        let harness = journaling(timeoutMs: 500)
        let writer = harness.connect()
        harness.send(writer, #"{"op":"set","ch":"a","value":1}"#)
        harness.send(writer, #"{"op":"set","ch":"a","value":2}"#)
        _ = harness.broker.tick(now: 600)
        let frames = harness.frames(writer)
        #expect(frames.map { $0["error"] as? String } == ["unavailable", "unavailable"])
        #expect(frames.map { $0["rev"] as? Int } == [1, 2])
    }

    @Test func shutdownWithTheFolderFullEndsHeldAnswersWithShuttingDown() {
        let harness = journaling(timeoutMs: 60_000)
        let writer = harness.connect()
        harness.send(writer, #"{"op":"set","ch":"a","value":1,"rid":5}"#)
        harness.broker.dataFolderReport(fault: "data folder full", writerBytes: 30, now: 10)
        harness.broker.shutdown(now: 20)
        let frames = harness.frames(writer)
        #expect(frames.count == 2)
        #expect(frames.first?["error"] as? String == "shutting_down")
        #expect(frames.first?["op"] as? String == "set")
        #expect(frames.first?["rid"] as? Int == 5)
        #expect(frames.last?["error"] as? String == "shutting_down")
    }

    @Test func aFaultDuringShutdownEndsHeldAnswersAtOnce() {
        let harness = journaling(timeoutMs: 60_000)
        let writer = harness.connect()
        harness.send(writer, #"{"op":"set","ch":"a","value":1}"#)
        harness.broker.shutdown(now: 20)
        #expect(harness.lines(writer).isEmpty, "a healthy writer still gets to release it")
        harness.broker.dataFolderReport(fault: "data folder full", writerBytes: 30, now: 30)
        let frames = harness.frames(writer)
        #expect(frames.map { $0["error"] as? String } == ["shutting_down", "shutting_down"])
    }

    @Test func theWriterQueueIsBoundedByBytes() {
        let harness = journaling(queueBytes: 1 << 20)
        let writer = harness.connect()
        let value = "\"" + String(repeating: "x", count: 300_000) + "\""
        for _ in 0..<5 {
            harness.send(writer, #"{"op":"set","ch":"big","value":\#(value)}"#)
            harness.broker.drainRecords { _, _ in }
        }
        harness.broker.durable(upTo: 3)
        let answers = harness.frames(writer).map { ($0["ok"] ?? $0["error"]) as? String }
        #expect(answers == ["set", "set", "set", "unavailable", "unavailable"], "\(answers)")
        // The writer caught up: changes go in again.
        harness.broker.dataFolderReport(fault: nil, writerBytes: 0, now: 0)
        harness.broker.durable(upTo: 3)
        harness.send(writer, #"{"op":"set","ch":"big","value":1}"#)
        #expect(harness.broker.hasPendingRecords)
    }
}
