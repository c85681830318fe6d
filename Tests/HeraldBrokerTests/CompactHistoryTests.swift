import Foundation
import Testing
@testable import HeraldBroker

/// The history log through the broker (docs/architecture.md, "The compact history log"): it
/// grows only while its oldest event is still readable, so a busy channel keeps its
/// `history` events in the smallest rings; a quiet channel's readable events are never
/// evicted to save room below `history_bytes`; a dropped channel gives its slot back.
@Suite struct CompactHistoryTests {
    private func historySeqs(_ harness: BrokerHarness, _ name: String) -> [Int] {
        guard let channel = harness.broker.channels[Array(name.utf8)] else { return [] }
        return harness.broker.heldChain(of: channel).map { harness.broker.retention.log.record($0).seq }
    }

    private func publish(_ harness: BrokerHarness, _ session: Session, _ channel: String, count: Int, data: String) {
        for _ in 0..<count { harness.send(session, #"{"op":"pub","ch":"\#(channel)","data":"\#(data)"}"#) }
    }

    /// 20,000 events of ~100 bytes on one channel keeping 100: the log never leaves its
    /// smallest rings (64 KiB and 1,024 records; before, the rings spread these events over
    /// 112 MiB), and the last 100 are exactly what it can replay.
    @Test func oneBusyChannelKeepsItsHistoryInTheSmallestRings() {
        let harness = BrokerHarness()
        let publisher = harness.connect()
        publish(harness, publisher, "app.busy", count: 20_000, data: String(repeating: "x", count: 60))
        #expect(historySeqs(harness, "app.busy") == Array(19_901...20_000))
        let log = harness.broker.retention.log
        #expect(log.byteCapacity == HistoryLog.minimumBytes, "byte ring \(log.byteCapacity)")
        #expect(log.recordCapacity == HistoryLog.minimumRecords, "record ring \(log.recordCapacity)")
        #expect(log.heldBytes <= HistoryLog.minimumBytes + HistoryLog.minimumRecords * HistoryLog.entryCost)
    }

    /// A quiet channel's 100 events sit at the front of the log while a busy one passes
    /// 10 MB through it: they stay readable (the log grows instead of evicting them, as it
    /// may below `history_bytes`), and the busy channel still has its last 100.
    @Test func aQuietChannelsReadableEventsAreNeverEvictedBelowTheCap() {
        let harness = BrokerHarness()
        let publisher = harness.connect()
        publish(harness, publisher, "app.quiet", count: 100, data: "q")
        publish(harness, publisher, "app.busy", count: 50_000, data: String(repeating: "b", count: 160))
        #expect(historySeqs(harness, "app.quiet") == Array(1...100))
        #expect(historySeqs(harness, "app.busy") == Array(49_901...50_000))
        let log = harness.broker.retention.log
        #expect(log.byteCapacity > HistoryLog.minimumBytes, "the log grew past its smallest ring")
        #expect(log.heldBytes <= harness.broker.config.historyBytes)
    }

    /// With `history_bytes` full of readable events the cap still rules: the oldest
    /// readable ones go, and the log never holds more than the cap.
    @Test func theCapStillEvictsReadableEventsWhenTheyFillIt() {
        var config = BrokerConfig(epoch: "e1")
        config.historyBytes = 256 << 10
        let harness = BrokerHarness(config)
        let publisher = harness.connect()
        for index in 0..<5_000 {
            harness.send(publisher, #"{"op":"pub","ch":"app.c\#(index % 1_000)","data":"\#(String(repeating: "d", count: 200))"}"#)
        }
        let log = harness.broker.retention.log
        #expect(log.heldBytes <= 256 << 10 && log.byteCapacity <= 256 << 10)
        // About 940 events of ~280 bytes fit: each channel's last event is one of the last
        // 1,000 publishes, its others 1,000 apart.
        #expect(historySeqs(harness, "app.c999") == [5] && historySeqs(harness, "app.c500") == [5],
                "the newest events are held")
        #expect(historySeqs(harness, "app.c0").isEmpty, "the oldest went to the cap")
    }

    /// 10,000 instance channels with one event each, removed by their owner, twice over:
    /// every slot comes back, and the second round reuses them (the table does not grow).
    @Test func droppedChannelsGiveTheirHistorySlotsBack() {
        let harness = BrokerHarness()
        var tableSize = 0
        for round in 0..<2 {
            let owner = harness.connect()
            for index in 0..<10_000 {
                harness.send(owner, #"{"op":"declare","ch":"room.\#(index)"}"#)
                harness.send(owner, #"{"op":"pub","ch":"room.\#(index)","data":\#(round)}"#)
            }
            _ = harness.lines(owner)
            #expect(harness.broker.retention.slots.count == 10_000)
            #expect(harness.request(owner, #"{"op":"remove","all":true}"#)["count"] as? Int == 10_000)
            while harness.broker.hasDeferredWork { harness.broker.continueDeferredWork() }
            #expect(harness.broker.retention.slots.count == 0, "round \(round): every dropped channel's slot is free")
            if round == 0 { tableSize = harness.broker.retention.slots.tableSize }
        }
        #expect(harness.broker.retention.slots.tableSize == tableSize, "the second round reused the slots")
        #expect(tableSize == 10_000)
    }
}
