import Foundation
import Testing
@testable import HeraldBroker

/// `since` replays sent as the connection drains (issue 13): a replay larger than
/// `max_pending` arrives whole, in order, once each, with live events after it.
@Suite struct ReplayFlowTests {
    /// 64 KiB of `max_pending` (the smallest the config allows) and history for 100,000 events.
    static func harness(history: Int = 100_000) -> BrokerHarness {
        var config = BrokerConfig(epoch: "e1")
        config.maxPending = 65_536
        config.history = history
        return BrokerHarness(config)
    }

    /// Publishes `count` events on `channel`, answers discarded.
    static func publish(_ harness: BrokerHarness, _ writer: Session, _ count: Int, on channel: String = "c") {
        for k in 0..<count { harness.send(writer, #"{"op":"pub","ch":"\#(channel)","data":\#(k)}"#) }
        _ = harness.lines(writer)
    }

    /// What a reader that keeps reading gets: takes the queued lines (the flush pass
    /// draining the dirty list, as the server does), lets the broker run a pass, calls `between` after each pass, until the
    /// broker has nothing left to queue. Checks the replay never holds more than `max_pending`.
    static func drain(_ harness: BrokerHarness, _ reader: Session, between: () -> Void = {}) -> [[String: Any]] {
        var frames: [[String: Any]] = []
        var passes = 0
        repeat {
            #expect(reader.pendingBytes <= harness.broker.config.maxPending)
            frames += harness.frames(reader)
            harness.broker.drainDirty { _ in }
            harness.broker.continueDeferredWork()
            between()
            passes += 1
        } while (harness.broker.hasDeferredWork || reader.pendingBytes > 0) && passes < 100_000
        return frames
    }

    /// The `seq`s of the event frames, in arrival order.
    static func seqs(_ frames: [[String: Any]]) -> [Int] { frames.compactMap { $0["seq"] as? Int } }

    @Test func replayLargerThanMaxPendingArrivesWholeAfterTheOkIssue13() {
        let harness = Self.harness()
        let writer = harness.connect()
        let reader = harness.connect()
        Self.publish(harness, writer, 20_000)
        harness.send(reader, #"{"op":"sub","ch":"c","sub":"r","since":0}"#)
        #expect(reader.pendingBytes <= 65_536, "the replay is not queued at once")
        let frames = Self.drain(harness, reader)
        #expect(frames.first?["ok"] as? String == "sub" && frames.first?["recovered"] as? Bool == true)
        #expect(!frames.contains { $0["error"] != nil }, "no slow_consumer")
        #expect(Self.seqs(frames) == Array(1...20_000))
        #expect(frames.dropFirst().allSatisfy { $0["replay"] as? Bool == true })
        #expect(harness.broker.replays.isEmpty && !harness.broker.hasDeferredWork)
    }

    @Test func liveEventsDuringAReplayFollowItInOrderOnce() {
        let harness = Self.harness()
        let writer = harness.connect()
        let reader = harness.connect()
        Self.publish(harness, writer, 5_000)
        harness.send(reader, #"{"op":"sub","ch":"c","since":0}"#)
        var published = 5_000
        let frames = Self.drain(harness, reader) {
            if published < 8_000 {
                harness.send(writer, #"{"op":"pub","ch":"c","data":"live"}"#)
                published += 1
            }
        }
        Self.publish(harness, writer, 10)
        let after = harness.frames(reader)
        #expect(!frames.contains { $0["error"] != nil })
        #expect(Self.seqs(frames + after) == Array(1...8_010), "every seq once, in order, no gap")
        let events = (frames + after).filter { $0["seq"] != nil }
        #expect(events.allSatisfy { ($0["replay"] as? Bool == true) == (($0["seq"] as? Int ?? 0) <= 5_000) },
                "replay:true up to the seq at the sub, then frames as live events are")
        #expect(after.count == 10 && after.allSatisfy { $0["replay"] == nil }, "live once caught up")
    }

    @Test func eventsEvictedBeforeTheReplayReachesThemAreReportedAsDropped() {
        let harness = Self.harness(history: 3_000)
        let writer = harness.connect()
        let reader = harness.connect()
        Self.publish(harness, writer, 3_000)
        harness.send(reader, #"{"op":"sub","ch":"c","since":0}"#)
        let first = harness.frames(reader)
        let sentFirst = Self.seqs(first).last ?? 0
        #expect(sentFirst > 0 && sentFirst < 2_000, "one window went at once")
        Self.publish(harness, writer, 2_000)
        let rest = Self.drain(harness, reader)
        let seqs = Self.seqs(first + rest)
        #expect(!(first + rest).contains { $0["error"] != nil })
        #expect(seqs == Array(1...sentFirst) + Array(2_001...5_000), "history kept 2,001...5,000")
        let afterGap = rest.first { $0["seq"] as? Int == 2_001 }
        #expect(afterGap?["dropped"] as? Int == 2_000 - sentFirst, "the gap is counted on the next event")
    }

    @Test func unsubscribingMidReplayStopsIt() {
        let harness = Self.harness()
        let writer = harness.connect()
        let reader = harness.connect()
        Self.publish(harness, writer, 5_000)
        harness.send(reader, #"{"op":"sub","ch":"c","sub":"r","since":0}"#)
        #expect(Self.seqs(harness.frames(reader)).count < 5_000)
        #expect(harness.request(reader, #"{"op":"unsub","sub":"r"}"#)["count"] as? Int == 1)
        let rest = Self.drain(harness, reader)
        #expect(rest.isEmpty, "nothing after the unsub's answer")
        #expect(harness.broker.replays.isEmpty && !harness.broker.hasDeferredWork)
        Self.publish(harness, writer, 3)
        #expect(harness.frames(reader).isEmpty)
    }

    @Test func disconnectingMidReplayLeavesNothingBehind() {
        let harness = Self.harness()
        let writer = harness.connect()
        let reader = harness.connect()
        Self.publish(harness, writer, 5_000)
        harness.send(reader, #"{"op":"sub","ch":"c","since":0}"#)
        harness.broker.disconnect(reader)
        harness.broker.drainDirty { _ in }
        harness.broker.continueDeferredWork()
        #expect(harness.broker.replays.isEmpty && !harness.broker.hasDeferredWork)
        Self.publish(harness, writer, 3)
    }

    @Test func maxCountsReplayedEventsAndEndsTheReplay() {
        let harness = Self.harness()
        let writer = harness.connect()
        let reader = harness.connect()
        Self.publish(harness, writer, 5_000)
        harness.send(reader, #"{"op":"sub","ch":"c","since":0,"max":3000}"#)
        let frames = Self.drain(harness, reader)
        #expect(!frames.contains { $0["error"] != nil })
        #expect(Self.seqs(frames) == Array(1...3_000))
        #expect(frames.last?["last"] as? Bool == true)
        #expect(harness.broker.replays.isEmpty)
    }

    @Test func aReaderThatStopsReadingStopsTheReplayWithinMaxPending() {
        let harness = Self.harness()
        let writer = harness.connect()
        let reader = harness.connect()
        Self.publish(harness, writer, 5_000)
        harness.send(reader, #"{"op":"sub","ch":"c","since":0}"#)
        // The server hands the queue to the socket, which takes none of it: still in flight.
        var taken: [UInt8] = []
        reader.takeOutbound(into: &taken)
        reader.inFlight = taken.count
        for _ in 0..<10 {
            harness.broker.drainDirty { _ in }
            harness.broker.continueDeferredWork()
        }
        #expect(reader.pendingBytes <= 65_536 && !reader.closeAfterFlush)
        #expect(!harness.broker.hasDeferredWork, "no busy loop while the socket is full")
        reader.inFlight = 0
        #expect(harness.broker.hasDeferredWork, "drained: the replay goes on")
    }

    @Test func ownEventsDuringAReplayFollowEchoFalse() {
        let harness = Self.harness()
        let writer = harness.connect()
        let reader = harness.connect(echo: false)
        Self.publish(harness, writer, 5_000)
        harness.send(reader, #"{"op":"sub","ch":"c","since":0}"#)
        _ = harness.frames(reader)
        harness.send(reader, #"{"op":"pub","ch":"c","data":"mine"}"#)
        harness.send(writer, #"{"op":"pub","ch":"c","data":"theirs"}"#)
        let frames = Self.drain(harness, reader)
        #expect(Self.seqs(frames).suffix(1) == [5_002], "its own seq 5,001 is skipped as live delivery would")
        #expect(!frames.contains { $0["data"] as? String == "mine" })
    }

    @Test func senderIsReadFromAStoredMiddle() {
        #expect(Array(Broker.sender(in: Array(#","seq":12,"from":"c7","kind":"set""#.utf8)[...])) == Array(#""c7""#.utf8))
        #expect(Broker.sender(in: Array(#","seq":"#.utf8)[...]).isEmpty)
        #expect(Broker.sender(in: []).isEmpty)
    }

    @Test func aGroupMemberReplaysUpToItsSubAndTheGroupGetsEachLaterEventOnce() {
        let harness = Self.harness()
        let writer = harness.connect()
        let live = harness.connect()
        let late = harness.connect()
        Self.publish(harness, writer, 5_000)
        _ = harness.subscribe(live, #""ch":"c","group":"g""#)
        harness.send(late, #"{"op":"sub","ch":"c","group":"g","since":0}"#)
        var published = 5_000
        var liveSeqs: [Int] = []
        let frames = Self.drain(harness, late) {
            if published < 5_100 {
                harness.send(writer, #"{"op":"pub","ch":"c","data":"live"}"#)
                published += 1
            }
            liveSeqs += Self.seqs(harness.frames(live))
        }
        Self.publish(harness, writer, 10)
        liveSeqs += Self.seqs(harness.frames(live))
        let lateSeqs = Self.seqs(frames + harness.frames(late))
        #expect(Array(lateSeqs.prefix(5_000)) == Array(1...5_000), "the replay, whole and in order")
        #expect(published > 5_010, "live events were published mid-replay")
        #expect((liveSeqs + lateSeqs.dropFirst(5_000)).sorted() == Array(5_001...(published + 10)),
                "each later event went to exactly one member")
        #expect(zip(lateSeqs, lateSeqs.dropFirst()).allSatisfy { $0 < $1 }, "nothing live overtook its replay")
    }

    @Test func historyTurnedOffMidReplayGoesLiveAndCountsWhatWasNotSent() {
        let harness = Self.harness()
        let writer = harness.connect()
        let reader = harness.connect()
        Self.publish(harness, writer, 5_000)
        harness.send(reader, #"{"op":"sub","ch":"c","since":0}"#)
        let sent = Self.seqs(harness.frames(reader)).count
        harness.broker.config.history = 0
        #expect(harness.broker.replays.isEmpty)
        harness.send(writer, #"{"op":"pub","ch":"c","data":"after"}"#)
        let next = harness.frames(reader)
        #expect(next.count == 1 && next.first?["seq"] as? Int == 5_001, "live at once: nothing published is lost")
        #expect(next.first?["dropped"] as? Int == 5_000 - sent, "what the replay had not sent is counted")
    }
}
