import Testing
@testable import HeraldBroker

/// `HistoryLog` (issue 35): every channel's events in one log of a byte ring and a record
/// ring; events of any size appended, evicted from the front and tombstoned in any order read
/// back exactly, the rings wrap and grow without losing a byte, and stay within the cap.
@Suite struct HistoryLogTests {
    /// A deterministic generator, so a failure repeats.
    private struct Generator: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return state
        }
    }

    /// The event bytes for `seq`, each byte derived from `seq` and its offset so a misplaced
    /// byte shows.
    private func parts(_ seq: Int, middle: Int, tail: Int) -> ([UInt8], [UInt8]) {
        let m = (0..<middle).map { UInt8(truncatingIfNeeded: seq &* 31 &+ $0) }
        let t = (0..<tail).map { UInt8(truncatingIfNeeded: seq &* 17 &+ $0 &+ 7) }
        return (m, t)
    }

    private struct Stored {
        let number: Int
        let seq: Int
        let middle: [UInt8]
        let tail: [UInt8]
        var isDead = false
    }

    /// Appends, evicting the oldest while the log says so, as the broker does.
    private func append(_ log: inout HistoryLog, _ model: inout [Stored], seq: Int, middle: [UInt8], tail: [UInt8],
                        capacity: Int) {
        while !log.makeRoom(for: middle.count + tail.count, capacity: capacity) {
            _ = log.evictOldest()
            model.removeFirst()
        }
        let number = middle.withUnsafeBytes { m in
            tail.withUnsafeBytes { t in
                log.append(seq: seq, position: seq, previous: seq - 1, middle: m, tail: t, owner: nil).number
            }
        }
        model.append(Stored(number: number, seq: seq, middle: middle, tail: tail))
        while log.heldBytes > capacity {
            _ = log.evictOldest()
            model.removeFirst()
        }
    }

    private func check(_ log: HistoryLog, against model: [Stored], capacity: Int) {
        #expect(log.count == model.count)
        #expect(model.first.map { $0.number == log.first } ?? true)
        for stored in model {
            #expect(log.isLive(stored.number) == !stored.isDead, "record \(stored.number)")
            let record = log.record(stored.number)
            let (middle, tail) = log.parts(of: stored.number)
            #expect(record.seq == stored.seq && Array(middle) == stored.middle && Array(tail) == stored.tail,
                    "event \(stored.seq)")
        }
        let held = model.reduce(0) { $0 + $1.middle.count + $1.tail.count + HistoryLog.entryCost }
        let dead = model.filter(\.isDead).reduce(0) { $0 + $1.middle.count + $1.tail.count + HistoryLog.entryCost }
        #expect(log.heldBytes == held && log.deadBytes == dead)
        #expect(log.heldBytes <= capacity)
        #expect(log.byteCapacity <= capacity, "ring of \(log.byteCapacity) bytes")
    }

    @Test func randomAppendsEvictionsAndTombstonesReadBackExactly() {
        var generator = Generator(state: 16)
        var log = HistoryLog()
        var model: [Stored] = []
        let capacity = 300_000
        for seq in 1...30_000 {
            let large = Int.random(in: 0..<50, using: &generator) == 0
            let tail = large ? Int.random(in: 1_000...16_384, using: &generator) : Int.random(in: 0...300, using: &generator)
            let (m, t) = parts(seq, middle: Int.random(in: 1...64, using: &generator), tail: tail)
            append(&log, &model, seq: seq, middle: m, tail: t, capacity: capacity)
            if Int.random(in: 0..<10, using: &generator) == 0, !model.isEmpty {
                let k = Int.random(in: 0..<model.count, using: &generator)
                let killed = log.kill(model[k].number)
                #expect((killed != nil) == !model[k].isDead)
                model[k].isDead = true
            }
            if seq % 97 == 0 { check(log, against: model, capacity: capacity) }
        }
        check(log, against: model, capacity: capacity)
    }

    /// The byte ring takes all of its capacity with the first event and is never copied
    /// again, however much passes through it: growing by doubling copied the live events at
    /// every step with the loop stopped, 1–2 ms at a few MiB (a fixed-rate run's p99.9).
    @Test func theByteRingIsReservedOnceAndNeverMoves() {
        var log = HistoryLog()
        var model: [Stored] = []
        let capacity = 1 << 20
        let (m, t) = parts(1, middle: 12, tail: 20)
        append(&log, &model, seq: 1, middle: m, tail: t, capacity: capacity)
        #expect(log.byteCapacity == capacity)
        let base = log.byteRingAddress
        // 10 MB through a 1 MiB ring: it wraps about ten times.
        for seq in 2...100_000 {
            let (m, t) = parts(seq, middle: 12, tail: 88)
            append(&log, &model, seq: seq, middle: m, tail: t, capacity: capacity)
        }
        #expect(log.byteCapacity == capacity)
        #expect(log.byteRingAddress == base, "the ring was never reallocated")
        check(log, against: model, capacity: capacity)
    }

    @Test func theRecordRingTakesWhatTheCapAllowsAtOnceAndNeverMoves() {
        var log = HistoryLog()
        var model: [Stored] = []
        let capacity = 1 << 20
        let (m, t) = parts(1, middle: 12, tail: 20)
        append(&log, &model, seq: 1, middle: m, tail: t, capacity: capacity)
        // 1 MiB over 48-byte records: 21,845 fit, so 16,384 slots at once.
        #expect(log.recordCapacity == 16_384)
        let base = log.recordRingAddress
        // 100-byte events: at most about 7,100 held, the ring never grows or moves.
        for seq in 2...100_000 {
            let (m, t) = parts(seq, middle: 12, tail: 88)
            append(&log, &model, seq: seq, middle: m, tail: t, capacity: capacity)
        }
        #expect(log.recordCapacity == 16_384)
        #expect(log.recordRingAddress == base, "the record ring was never reallocated")
        check(log, against: model, capacity: capacity)
    }

    @Test func theRingsGrowFromSmallAndAnEvictedNumberIsNeverLiveAgain() {
        var log = HistoryLog()
        var model: [Stored] = []
        let capacity = 1 << 20
        for seq in 1...50_000 {
            let (m, t) = parts(seq, middle: 12, tail: 20)
            append(&log, &model, seq: seq, middle: m, tail: t, capacity: capacity)
        }
        #expect(log.count == model.count && log.count < 50_000, "the cap evicted the oldest")
        #expect(!log.isLive(0) && !log.isLive(log.first - 1), "evicted numbers are not live even where slots are reused")
        #expect(log.isLive(log.end - 1) && !log.isLive(log.end))
        check(log, against: model, capacity: capacity)
    }

    @Test func removeAllCreditsEveryLiveOwnedRecordAndEmptiesTheLog() {
        var log = HistoryLog()
        var model: [Stored] = []
        for seq in 1...100 {
            let (m, t) = parts(seq, middle: 10, tail: 10)
            append(&log, &model, seq: seq, middle: m, tail: t, capacity: 1 << 20)
        }
        _ = log.kill(model[5].number)
        var credited = 0
        log.removeAll { _, _ in credited += 1 }
        #expect(credited == 0, "no record had an owner")
        #expect(log.count == 0 && log.heldBytes == 0 && log.deadBytes == 0 && log.byteCapacity == 0)
        #expect(!log.isLive(model[99].number))
    }

    /// Records name their account by a slot in the log's owner table: a slot is held while
    /// the account owns a live record, freed when its last one is evicted or tombstoned,
    /// and reused by the next account, so the table stays as small as the accounts with
    /// records (10,000 accounts taking turns use one slot).
    @Test func ownerSlotsAreFreedWithTheirLastRecordAndReused() {
        var log = HistoryLog()
        let (m, t) = parts(1, middle: 8, tail: 8)
        func add(_ owner: UserAccount?) -> Int {
            _ = log.makeRoom(for: m.count + t.count, capacity: 1 << 20)
            return m.withUnsafeBytes { middle in
                t.withUnsafeBytes { tail in
                    log.append(seq: 1, position: 0, previous: -1, middle: middle, tail: tail, owner: owner).number
                }
            }
        }
        let ada = UserAccount(name: "ada"), bob = UserAccount(name: "bob")
        let first = add(ada), second = add(ada), third = add(bob)
        #expect(ada.historyOwnerSlot == 0 && bob.historyOwnerSlot == 1)
        #expect(log.kill(first)?.owner === ada, "a tombstone hands its owner back for crediting")
        #expect(ada.historyOwnerSlot == 0, "ada still owns a live record")
        #expect(log.evictOldest().owner == nil, "the tombstoned record was credited already")
        #expect(log.evictOldest().owner === ada)
        #expect(ada.historyOwnerSlot == -1, "ada's last record went: its slot is free")
        let cat = UserAccount(name: "cat")
        _ = add(cat)
        #expect(cat.historyOwnerSlot == 0, "the free slot is reused")
        #expect(log.record(third).owner == 1 && log.record(log.end - 1).owner == 0)
        for round in 0..<10_000 {
            let account = UserAccount(name: "u\(round)")
            _ = add(account)
            while log.count > 2 { _ = log.evictOldest() }
            #expect(account.historyOwnerSlot >= 0 && account.historyOwnerSlot < 3)
        }
        var credited: [String] = []
        log.removeAll { owner, _ in credited.append(owner.name) }
        #expect(credited.count == 2, "the two live owned records are credited: \(credited)")
        _ = second
    }
}
