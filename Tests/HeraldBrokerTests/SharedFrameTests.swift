import Foundation
@testable import HeraldBroker
import Testing

/// Subscribers of one channel with the same prefix (one subscription name) get each event's
/// frame written once into the broker's `FrameArena` and queued by reference
/// (`Session+Spans.swift`). Their connections write the queue's bytes then the spans; every
/// other reader of the queue copies the spans in first. Frames must come out whole and in
/// order whatever else is queued between them, the arena must start again only when no list
/// points into it, and a full arena must fall back to copies.
@Suite struct SharedFrameTests {
    /// Connects `count` sessions that take spans (as a one-loop server's plain connections),
    /// each subscribed to `channel` as `name`.
    private func subscribers(_ harness: BrokerHarness, count: Int, channel: String = "s.t",
                             name: String = "a", compact: Bool = false) -> [Session] {
        (0..<count).map { _ in
            let session = harness.connect()
            session.sharesFrames = true
            harness.subscribe(session, #""ch":"\#(channel)","sub":"\#(name)","compact":\#(compact)"#)
            return session
        }
    }

    /// What a connection writes: the queued bytes, then the spans; the spans are released.
    private func written(_ session: Session) -> String {
        var bytes: [UInt8] = []
        var spans: [FrameSpan] = []
        let spanBytes = session.takeOutbound(into: &bytes, spans: &spans)
        if !spans.isEmpty, let arena = session.frameArena {
            for span in spans { bytes.append(contentsOf: arena.bytes(span)) }
            arena.release()
        }
        #expect(spans.reduce(0) { $0 + Int($1.count) } == spanBytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    private func frames(_ text: String) -> [[String: Any]] {
        text.split(separator: "\n").map { line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]) ?? ["unparsable": String(line)]
        }
    }

    @Test func subscribersWithOneNameQueueTheSameFrameByReferenceInOneSpan() {
        let harness = BrokerHarness()
        let readers = subscribers(harness, count: 3)
        let publisher = harness.connect()
        for k in 1...50 { harness.send(publisher, #"{"op":"pub","ch":"s.t","data":\#(k)}"#) }
        let arena = harness.broker.frameArenas
        #expect(arena.holders == 3)
        for reader in readers {
            #expect(reader.spanList.count == 1, "consecutive frames in the arena merge into one span")
            #expect(reader.pendingBytes == reader.spanBytes)
            #expect(!reader.hasNoOutbound)
        }
        let texts = readers.map(written)
        #expect(arena.holders == 0)
        #expect(texts[0] == texts[1] && texts[1] == texts[2])
        let parsed = frames(texts[0])
        #expect(parsed.compactMap { $0["data"] as? Int } == Array(1...50))
        #expect(parsed.compactMap { $0["seq"] as? Int } == Array(1...50))
        #expect(parsed.allSatisfy { $0["sub"] as? String == "a" && $0["event"] as? String == "s.t" })
        #expect(readers.allSatisfy { $0.pendingBytes == 0 })
    }

    @Test func answersCopiedFramesAndLargeFramesBetweenSharedFramesKeepTheirOrder() {
        let harness = BrokerHarness()
        let readers = subscribers(harness, count: 2)
        let mixed = readers[0]
        // A second subscription only it has, under its own name: copied, not shared.
        harness.subscribe(mixed, #""ch":"s.u","sub":"own""#)
        let publisher = harness.connect()
        var expected: [String] = []
        for k in 0..<300 {
            let size = [3, 200, 900, 5000][k % 4]
            harness.send(publisher, #"{"op":"pub","ch":"s.t","data":"\#(String(repeating: "x", count: size))"}"#)
            expected.append("t \(size)")
            if k % 7 == 0 {
                harness.send(publisher, #"{"op":"pub","ch":"s.u","data":\#(k)}"#)
                expected.append("u \(k)")
            }
            if k % 11 == 0 {
                harness.send(mixed, #"{"op":"ping","rid":\#(k)}"#)
                expected.append("pong \(k)")
            }
        }
        let seen = frames(written(mixed)).map { frame -> String in
            if frame["event"] as? String == "s.t", let data = frame["data"] as? String { return "t \(data.count)" }
            if frame["event"] as? String == "s.u", let data = frame["data"] as? Int { return "u \(data)" }
            if let rid = frame["rid"] as? Int { return "pong \(rid)" }
            return "other \(frame)"
        }
        #expect(seen == expected)
        #expect(frames(written(readers[1])).compactMap { $0["seq"] as? Int } == Array(1...300))
        #expect(harness.broker.frameArenas.holders == 0)
    }

    @Test func takesBetweenPublishesAndReadsOfTheQueueLoseNothing() {
        let harness = BrokerHarness()
        let readers = subscribers(harness, count: 4)
        let publisher = harness.connect()
        var texts = Array(repeating: "", count: readers.count)
        for k in 1...400 {
            harness.send(publisher, #"{"op":"pub","ch":"s.t","data":\#(k)}"#)
            if k % 13 == 0 { texts[0] += written(readers[0]) }
            // Reading the queue the ordinary way copies the spans in first.
            if k % 17 == 0 { texts[1] += harness.lines(readers[1]).map { $0 + "\n" }.joined() }
            if k % 29 == 0 { readers[2].keepSpansInQueue() }
        }
        for k in readers.indices { texts[k] += written(readers[k]) }
        for text in texts { #expect(frames(text).compactMap { $0["data"] as? Int } == Array(1...400)) }
        #expect(harness.broker.frameArenas.holders == 0)
    }

    @Test func theArenaStartsAgainOnlyOnceNoSpanListPointsIntoIt() {
        let harness = BrokerHarness()
        let readers = subscribers(harness, count: 2)
        let publisher = harness.connect()
        harness.send(publisher, #"{"op":"pub","ch":"s.t","data":1}"#)
        #expect(readers[0].spanList.first?.start == 0)
        _ = written(readers[0])
        // readers[1] still points at the first frame: the next one goes after it.
        harness.send(publisher, #"{"op":"pub","ch":"s.t","data":2}"#)
        let second = readers[0].spanList.first
        #expect(second.map { $0.start > 0 } == true)
        #expect(readers[1].spanList.count == 1 && readers[1].spanList[0].start == 0)
        let text = written(readers[1])
        #expect(frames(text).compactMap { $0["data"] as? Int } == [1, 2])
        _ = written(readers[0])
        harness.send(publisher, #"{"op":"pub","ch":"s.t","data":3}"#)
        #expect(readers[0].spanList.first?.start == 0, "nothing held it: it started again")
        #expect(frames(written(readers[1])).compactMap { $0["data"] as? Int } == [3])
        _ = written(readers[0])
    }

    @Test func aPoolPinnedByWritesInFlightFallsBackToCopiesAndKeepsTheOrder() {
        let harness = BrokerHarness(BrokerConfig(maxPending: 64 << 20))
        let readers = subscribers(harness, count: 3)
        let publisher = harness.connect()
        let payload = String(repeating: "y", count: 1000)
        let pool = harness.broker.frameArenas
        // Writes taken and not finished (a connection's list in flight) pin their arena.
        var inFlight: [(bytes: [UInt8], spans: [FrameSpan], arena: FrameArena?)] = []
        var streams = Array(repeating: [UInt8](), count: readers.count)
        func takeAll() {
            for (k, reader) in readers.enumerated() {
                var bytes: [UInt8] = []
                var spans: [FrameSpan] = []
                _ = reader.takeOutbound(into: &bytes, spans: &spans)
                let arena = spans.isEmpty ? nil : reader.frameArena
                streams[k] += bytes
                for span in spans { streams[k] += Array(arena!.bytes(span)) }
                inFlight.append((bytes, spans, arena))
            }
        }
        var sent = 0
        var copied = false
        while !copied && sent < 20_000 {
            sent += 1
            harness.send(publisher, #"{"op":"pub","ch":"s.t","data":"\#(payload)"}"#)
            // No arena had room: the frame was copied (and the session's spans with it).
            copied = readers[0].spanList.isEmpty
            if sent % 50 == 0 && !copied { takeAll() }
        }
        #expect(copied)
        #expect(pool.count == FrameArenaPool.maximumCount)
        for _ in 0..<20 {
            sent += 1
            harness.send(publisher, #"{"op":"pub","ch":"s.t","data":"\#(payload)"}"#)
        }
        // The writes complete and the queues are written: every arena is free again, and
        // the next event is shared from the start of one.
        for write in inFlight where !write.spans.isEmpty { write.arena?.release() }
        for (k, reader) in readers.enumerated() { streams[k] += Array(written(reader).utf8) }
        #expect(pool.holders == 0)
        sent += 1
        harness.send(publisher, #"{"op":"pub","ch":"s.t","data":"\#(payload)"}"#)
        #expect(readers.allSatisfy { $0.spanList.count == 1 && $0.spanList[0].start == 0 })
        for (k, reader) in readers.enumerated() {
            let text = String(decoding: streams[k], as: UTF8.self) + written(reader)
            let parsed = frames(text)
            #expect(parsed.compactMap { $0["seq"] as? Int } == Array(1...sent))
            #expect(parsed.allSatisfy { ($0["data"] as? String)?.count == 1000 })
        }
    }

    @Test func aListNobodyTakesMovesToCopiesAndDoesNotStopTheOthersSharing() {
        let harness = BrokerHarness(BrokerConfig(maxPending: 64 << 20))
        let readers = subscribers(harness, count: 2)
        let (taker, idle) = (readers[0], readers[1])
        let publisher = harness.connect()
        let payload = String(repeating: "w", count: 1000)
        var taken = ""
        let count = 5 * FrameArena.capacity / 1100
        for k in 1...count {
            harness.send(publisher, #"{"op":"pub","ch":"s.t","data":"\#(payload)"}"#)
            #expect(taker.spanList.count == 1, "event \(k) was shared")
            taken += written(taker)
        }
        #expect(harness.broker.frameArenas.count == 2, "the idle list's arena is copied out when the next fills")
        #expect(harness.broker.frameArenas.holders == 1)
        #expect(frames(taken).compactMap { $0["seq"] as? Int } == Array(1...count))
        #expect(frames(written(idle)).compactMap { $0["seq"] as? Int } == Array(1...count))
        #expect(harness.broker.frameArenas.holders == 0)
    }

    @Test func maxPendingCountsSpanBytes() {
        let harness = BrokerHarness(BrokerConfig(maxPending: 2000, overflow: .drop))
        let readers = subscribers(harness, count: 2)
        let publisher = harness.connect()
        for _ in 0..<100 { harness.send(publisher, #"{"op":"pub","ch":"s.t","data":"0123456789"}"#) }
        for reader in readers {
            #expect(reader.pendingBytes <= 2000 && reader.pendingBytes > 2000 - 100)
            #expect(reader.spanBytes == reader.pendingBytes)
        }
        let delivered = frames(written(readers[0])).count
        #expect(delivered > 0 && delivered < 100)
        harness.send(publisher, #"{"op":"pub","ch":"s.t","data":"0123456789"}"#)
        #expect(frames(written(readers[0])).first?["dropped"] as? Int == 100 - delivered)
        _ = written(readers[1])
    }

    @Test func differentNamesAndConnectionsThatDoNotTakeSpansAreCopiedAsBefore() {
        let harness = BrokerHarness()
        let named = ["a", "b", "c"].map { name -> Session in
            let session = harness.connect()
            session.sharesFrames = true
            harness.subscribe(session, #""ch":"s.t","sub":"\#(name)""#)
            return session
        }
        let plain = harness.connect()
        harness.subscribe(plain, #""ch":"s.t","sub":"c""#)
        let publisher = harness.connect()
        for k in 1...20 { harness.send(publisher, #"{"op":"pub","ch":"s.t","data":\#(k)}"#) }
        #expect(named[0].spanList.isEmpty && named[1].spanList.isEmpty, "their prefixes differ from their neighbours'")
        #expect(plain.spanList.isEmpty, "a connection that does not write spans never gets any")
        for (session, name) in zip(named + [plain], ["a", "b", "c", "c"]) {
            let parsed = frames(written(session))
            #expect(parsed.compactMap { $0["data"] as? Int } == Array(1...20))
            #expect(parsed.allSatisfy { $0["sub"] as? String == name })
        }
        #expect(harness.broker.frameArenas.holders == 0)
    }

    @Test func compactSubscribersShareAFrameWithoutFrom() {
        let harness = BrokerHarness()
        let readers = subscribers(harness, count: 3, compact: true)
        let publisher = harness.connect()
        for k in 1...10 { harness.send(publisher, #"{"op":"pub","ch":"s.t","data":\#(k)}"#) }
        #expect(readers.allSatisfy { $0.spanList.count == 1 })
        for reader in readers {
            let parsed = frames(written(reader))
            #expect(parsed.compactMap { $0["data"] as? Int } == Array(1...10))
            #expect(parsed.allSatisfy { $0["from"] == nil && $0["sub"] == nil })
        }
    }

    @Test func twentySubscribersTakingEveryFewEventsGetTenArenasOfLargeFramesWhole() {
        let harness = BrokerHarness(BrokerConfig(maxPending: 64 << 20))
        let readers = subscribers(harness, count: 20)
        let publisher = harness.connect()
        let payload = String(repeating: "L", count: 16_000)
        let count = 10 * FrameArena.capacity / 16_100
        var seqs: [Int] = []
        for k in 1...count {
            harness.send(publisher, #"{"op":"pub","ch":"s.t","data":"\#(payload)"}"#)
            // A pass of 40 frames (640 KiB) before the connections write: several per arena.
            guard k % 40 == 0 || k == count else { continue }
            let first = written(readers[0])
            for reader in readers.dropFirst() { #expect(written(reader) == first) }
            let parsed = frames(first)
            #expect(parsed.allSatisfy { ($0["data"] as? String)?.count == 16_000 })
            seqs += parsed.compactMap { $0["seq"] as? Int }
        }
        #expect(seqs == Array(1...count))
        #expect(harness.broker.frameArenas.holders == 0)
        #expect(harness.broker.frameArenas.count == 1, "each pass fits one arena, which starts again")
    }

    @Test func aThousandSubscribersPastOneArenaEachGetEverything() {
        let harness = BrokerHarness(BrokerConfig(maxPending: 64 << 20))
        let readers = subscribers(harness, count: 1000)
        let publisher = harness.connect()
        let count = 3000
        let payload = String(repeating: "z", count: 800)
        for k in 1...count { harness.send(publisher, #"{"op":"pub","ch":"s.t","data":"\#(payload)\#(k)"}"#) }
        let arena = harness.broker.frameArenas
        #expect(arena.holders <= readers.count)
        // Every reader's stream is the same bytes; parse a few, compare the rest.
        let first = written(readers[0])
        let parsed = frames(first)
        #expect(parsed.compactMap { $0["seq"] as? Int } == Array(1...count))
        for reader in readers.dropFirst() { #expect(written(reader) == first) }
        #expect(arena.holders == 0)
    }

    @Test func spansMoveOntoAHandOffListWithTheirHoldAndOnlyWhenNothingElseIsQueued() {
        let harness = BrokerHarness()
        let readers = subscribers(harness, count: 2)
        let publisher = harness.connect()
        let pool = harness.broker.frameArenas
        harness.send(publisher, #"{"op":"pub","ch":"s.t","data":1}"#)
        // An empty box list takes the spans and the hold.
        var box: [FrameSpan] = []
        var boxArena: FrameArena?
        let first = readers[0].moveSpans(appendingTo: &box, arena: &boxArena)
        #expect(first != nil && box.count == 1 && boxArena != nil)
        #expect(pool.holders == 2, "the hold moved with the spans")
        #expect(readers[0].pendingBytes == 0 && readers[0].hasNoOutbound)
        // More frames join the box's list: merged, the session's own hold let go.
        harness.send(publisher, #"{"op":"pub","ch":"s.t","data":2}"#)
        #expect(pool.holders == 3)
        let second = readers[0].moveSpans(appendingTo: &box, arena: &boxArena)
        #expect(second != nil && box.count == 1)
        #expect(pool.holders == 2)
        // An answer queued before the next frame: nothing moves (it must stay in front).
        harness.send(readers[0], #"{"op":"ping","rid":9}"#)
        harness.send(publisher, #"{"op":"pub","ch":"s.t","data":3}"#)
        #expect(readers[0].moveSpans(appendingTo: &box, arena: &boxArena) == nil)
        var bytes: [UInt8] = []
        if let arena = boxArena { for span in box { bytes += Array(arena.bytes(span)) } }
        boxArena?.release()
        let text = String(decoding: bytes, as: UTF8.self) + written(readers[0])
        let parsed = frames(text)
        #expect(parsed.compactMap { $0["data"] as? Int } == [1, 2, 3])
        #expect(parsed.contains { $0["rid"] as? Int == 9 })
        _ = written(readers[1])
        #expect(pool.holders == 0)
    }
}
