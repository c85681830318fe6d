import Testing
@testable import HeraldBroker

/// `EventHistory`'s byte ring (issue 16, row 5): events of any size, recorded and evicted in
/// any order, read back exactly; the ring wraps, grows and shrinks without losing a byte and
/// stays within a fixed multiple of what it holds.
@Suite struct EventHistoryRingTests {
    /// A deterministic generator, so a failure repeats.
    private struct Generator: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return state
        }
    }

    /// The event bytes for `seq`: a middle and a tail of the given sizes, each byte derived from
    /// `seq` and its offset so a misplaced byte shows.
    private func parts(_ seq: Int, middle: Int, tail: Int) -> ([UInt8], [UInt8]) {
        let m = (0..<middle).map { UInt8(truncatingIfNeeded: seq &* 31 &+ $0) }
        let t = (0..<tail).map { UInt8(truncatingIfNeeded: seq &* 17 &+ $0 &+ 7) }
        return (m, t)
    }

    private func record(_ history: inout EventHistory, _ seq: Int, middle: [UInt8], tail: [UInt8]) {
        _ = middle.withUnsafeBytes { m in
            tail.withUnsafeBytes { t in history.record(seq: seq, stamp: seq, middle: m, tail: t, owner: nil) }
        }
    }

    private func check(_ history: EventHistory, against model: [(seq: Int, middle: [UInt8], tail: [UInt8])], maxLength: Int) {
        var seen: [(Int, [UInt8], [UInt8])] = []
        history.forEach(after: 0) { seq, middle, tail in seen.append((seq, Array(middle), Array(tail))) }
        #expect(seen.count == model.count)
        for (got, want) in zip(seen, model) {
            #expect(got.0 == want.seq && got.1 == want.middle && got.2 == want.tail, "event \(want.seq)")
        }
        for (k, want) in model.enumerated() {
            let event = history.event(at: history.firstPosition + k)
            #expect(event.seq == want.seq && Array(event.middle) == want.middle && Array(event.tail) == want.tail)
        }
        let live = model.reduce(0) { $0 + $1.middle.count + $1.tail.count }
        #expect(history.liveBytes == live + model.count * EventHistory.entryCost)
        #expect(history.bytes.count <= max(EventHistory.minimumRing, 4 * live + 2 * maxLength),
                "ring of \(history.bytes.count) bytes for \(live) live")
    }

    @Test func randomRecordsAndEvictionsReadBackExactly() {
        var generator = Generator(state: 16)
        var history = EventHistory()
        var model: [(seq: Int, middle: [UInt8], tail: [UInt8])] = []
        let maxLength = 16_384 + 64
        for seq in 1...20_000 {
            // Mostly small events, now and then a large one, and phases where the count limit changes.
            let large = Int.random(in: 0..<50, using: &generator) == 0
            let tail = large ? Int.random(in: 1_000...16_384, using: &generator) : Int.random(in: 0...300, using: &generator)
            let (m, t) = parts(seq, middle: Int.random(in: 0...64, using: &generator), tail: tail)
            record(&history, seq, middle: m, tail: t)
            model.append((seq, m, t))
            let limit = (seq / 2_000) % 2 == 0 ? 100 : 7
            while model.count > limit || (Int.random(in: 0..<200, using: &generator) == 0 && !model.isEmpty) {
                _ = history.evictOldest()
                model.removeFirst()
            }
            if seq % 97 == 0 { check(history, against: model, maxLength: maxLength) }
        }
        check(history, against: model, maxLength: maxLength)
    }

    @Test func aBurstOfLargeEventsShrinksBackOnceEvicted() {
        var history = EventHistory()
        for seq in 1...100 {
            let (m, t) = parts(seq, middle: 10, tail: 16_384)
            record(&history, seq, middle: m, tail: t)
        }
        #expect(history.bytes.count >= 100 * 16_394)
        for _ in 1...99 { _ = history.evictOldest() }
        #expect(history.bytes.count <= 4 * 16_394, "one event left, ring \(history.bytes.count)")
        _ = history.evictOldest()
        #expect(history.count == 0 && history.bytes.count <= EventHistory.minimumRing)
    }

    @Test func emptiedHistoryStartsAgainAtTheRingsStart() {
        var history = EventHistory()
        var model: [(seq: Int, middle: [UInt8], tail: [UInt8])] = []
        for seq in 1...10 {
            let (m, t) = parts(seq, middle: 5, tail: 20)
            record(&history, seq, middle: m, tail: t)
            model.append((seq, m, t))
        }
        while !model.isEmpty { _ = history.evictOldest(); model.removeFirst() }
        for seq in 11...15 {
            let (m, t) = parts(seq, middle: 5, tail: 20)
            record(&history, seq, middle: m, tail: t)
            model.append((seq, m, t))
        }
        check(history, against: model, maxLength: 25)
        #expect(history.firstPosition == 10)
    }
}
