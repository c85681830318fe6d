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

    /// Appends, evicting the oldest while the log says so, as the broker does. Every event
    /// is one channel's (its position is its `seq`); with `keeping`, the events past the last
    /// `keeping` are expired, without it every event stays readable.
    private func append(_ log: inout HistoryLog, _ model: inout [Stored], seq: Int, middle: [UInt8], tail: [UInt8],
                        capacity: Int, keeping: Int? = nil) {
        while !log.makeRoom(for: middle.count + tail.count, capacity: capacity, keeping: keeping ?? Int.max) {
            _ = log.evictOldest()
            model.removeFirst()
        }
        // The log evicts unowned records itself: the model follows its front.
        model.removeFirst(model.prefix { $0.number < log.first }.count)
        let number = middle.withUnsafeBytes { m in
            tail.withUnsafeBytes { t in
                log.append(seq: seq, position: seq, previous: seq - 1, middle: m, tail: t, owner: nil, channel: 0).number
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

    @Test(arguments: [nil, 200] as [Int?])
    func randomAppendsEvictionsAndTombstonesReadBackExactly(keeping: Int?) {
        var generator = Generator(state: 16)
        var log = HistoryLog()
        var model: [Stored] = []
        let capacity = 300_000
        for seq in 1...30_000 {
            let large = Int.random(in: 0..<50, using: &generator) == 0
            let tail = large ? Int.random(in: 1_000...16_384, using: &generator) : Int.random(in: 0...300, using: &generator)
            let (m, t) = parts(seq, middle: Int.random(in: 1...64, using: &generator), tail: tail)
            append(&log, &model, seq: seq, middle: m, tail: t, capacity: capacity, keeping: keeping)
            if let keeping, model.count > keeping {
                #expect(model[model.count - keeping - 1].number >= log.first, "the last \(keeping) are held")
            }
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

    /// One channel keeping 100 events of 100 bytes: 10 MB pass through, the rings stay at
    /// their smallest (64 KiB of bytes, 1,024 records, in cache), never move, and the last
    /// 100 events are always held. Before, the rings spread those 100 events over the whole
    /// cap (112 MiB at the default), touching every page of it.
    @Test func ringsStaySmallWhenTheOldestRecordIsPastItsChannelsCount() {
        var log = HistoryLog()
        var model: [Stored] = []
        let capacity = 64 << 20
        let (m, t) = parts(1, middle: 12, tail: 20)
        append(&log, &model, seq: 1, middle: m, tail: t, capacity: capacity, keeping: 100)
        let bytesBase = log.byteRingAddress
        let recordsBase = log.recordRingAddress
        for seq in 2...100_000 {
            let (m, t) = parts(seq, middle: 12, tail: 88)
            append(&log, &model, seq: seq, middle: m, tail: t, capacity: capacity, keeping: 100)
            if seq % 1_000 == 0 { #expect(log.count >= 100 && model[model.count - 100].number >= log.first) }
        }
        #expect(log.byteCapacity == HistoryLog.minimumBytes)
        #expect(log.recordCapacity == HistoryLog.minimumRecords)
        #expect(log.byteRingAddress == bytesBase && log.recordRingAddress == recordsBase, "never reallocated")
        check(log, against: model, capacity: capacity)
    }

    @Test func evictingAnExpiredRecordTakesARunOfExpiredOnesButNeverAReadableOne() {
        var log = HistoryLog()
        var model: [Stored] = []
        var drops: Set<Int> = []
        for seq in 1...20_000 {
            let before = log.count
            let (m, t) = parts(seq, middle: 12, tail: 88)
            append(&log, &model, seq: seq, middle: m, tail: t, capacity: 64 << 20, keeping: 100)
            drops.insert(before + 1 - log.count)
            // The channel's last 100 events are all still there.
            #expect(log.count >= min(seq, 100) && model[model.count - min(seq, 100)].number >= log.first)
        }
        #expect(drops.contains { $0 > 1 }, "a slow-path eviction took more than the one it needed")
        #expect(drops.allSatisfy { $0 <= 1 + HistoryLog.expiredRunLimit })
        check(log, against: model, capacity: 64 << 20)
    }

    /// Appends 100-byte events, every one readable, and returns each size the byte ring and
    /// the record ring had, in order; checks the log against the model half-way.
    private func ringSizes(_ log: inout HistoryLog, _ model: inout [Stored], events: ClosedRange<Int>,
                           capacity: Int) -> (bytes: [Int], records: [Int]) {
        var byteSizes: [Int] = []
        var recordSizes: [Int] = []
        for seq in events {
            let (m, t) = parts(seq, middle: 12, tail: 88)
            append(&log, &model, seq: seq, middle: m, tail: t, capacity: capacity)
            if byteSizes.last != log.byteCapacity { byteSizes.append(log.byteCapacity) }
            if recordSizes.last != log.recordCapacity { recordSizes.append(log.recordCapacity) }
            if seq == (events.lowerBound + events.upperBound) / 2 { check(log, against: model, capacity: capacity) }
        }
        return (byteSizes, recordSizes)
    }

    /// Every event readable: the rings double from their smallest up to the cap (1 MiB
    /// here), then wrap in place; 10 MB through them and they never move again.
    @Test func ringsGrowByDoublingWhileEveryRecordIsReadableThenWrapInPlace() {
        var log = HistoryLog()
        var model: [Stored] = []
        let capacity = 1 << 20
        let (byteSizes, recordSizes) = ringSizes(&log, &model, events: 1...100_000, capacity: capacity)
        let doublings: [Int] = [65_536, 131_072, 262_144, 524_288, 1_048_576]
        #expect(byteSizes == doublings)
        // 100-byte events: about 7,100 held under the cap, so 8,192 slots.
        let recordDoublings: [Int] = [1_024, 2_048, 4_096, 8_192]
        #expect(recordSizes == recordDoublings)
        let bytesBase = log.byteRingAddress
        let recordsBase = log.recordRingAddress
        for seq in 100_001...200_000 {
            let (m, t) = parts(seq, middle: 12, tail: 88)
            append(&log, &model, seq: seq, middle: m, tail: t, capacity: capacity)
        }
        #expect(log.byteRingAddress == bytesBase && log.recordRingAddress == recordsBase, "never reallocated")
        check(log, against: model, capacity: capacity)
    }

    /// Past `stepwiseGrowthLimit` a ring takes all the cap allows at once, so the largest
    /// copy with the loop stopped is a few MiB, not half of `history_bytes`.
    @Test func pastTheStepwiseLimitTheRingsTakeTheWholeCapAtOnce() {
        var log = HistoryLog()
        var model: [Stored] = []
        let capacity = 64 << 20
        let (byteSizes, recordSizes) = ringSizes(&log, &model, events: 1...70_000, capacity: capacity)
        let steps: [Int] = [65_536, 131_072, 262_144, 524_288, 1_048_576, 2_097_152, 67_108_864]
        #expect(byteSizes == steps)
        // 64 MiB over 48-byte records: 1,398,101 fit, so 1,048,576 slots once 65,536 would
        // pass the limit (131,072 × 48 B is 6 MiB).
        let recordSteps: [Int] = [1_024, 2_048, 4_096, 8_192, 16_384, 32_768, 65_536, 1_048_576]
        #expect(recordSizes == recordSteps)
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
            _ = log.makeRoom(for: m.count + t.count, capacity: 1 << 20, keeping: Int.max)
            return m.withUnsafeBytes { middle in
                t.withUnsafeBytes { tail in
                    log.append(seq: 1, position: 0, previous: -1, middle: middle, tail: tail, owner: owner, channel: 0).number
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
