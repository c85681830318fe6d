/// Every channel's history in one log (issue 35, "Speed, round 3"): events are appended in
/// arrival order to one ring of bytes and one ring of records, and each record names the
/// previous record of its channel, so a channel's events are a chain walked back from its
/// newest (`ChannelHistory.newest`).
///
/// Why one log: with a ring and an entry array per channel, a publish to one of 10,000
/// channels wrote to two places tens of megabytes apart, two cache misses per publish that no
/// prefetcher follows (history halved the throughput at 10,000 channels; docs/architecture.md).
/// Appending to one log writes sequentially, and the channel object the lookup already
/// brought into cache keeps only its newest record number and its count.
///
/// What it costs, decided: limits are applied when reading, and when the log is full. A
/// record past its channel's `history` count (expired), or tombstoned (a user's
/// `history_bytes`, a dropped channel), keeps its bytes until the log needs the room. The
/// rings start small and grow only while their oldest record is still readable
/// (`makeRoom`), so the log holds about what its channels can replay, not `history_bytes`
/// whenever traffic passes through it: one busy channel keeps its 100 events in a ring of
/// 64 KiB that stays in cache, not spread over 112 MiB (docs/architecture.md, "The compact
/// history log"). Memory is bounded exactly by `history_bytes`: each record's frame bytes
/// plus `entryCost` are counted.
///
/// Record numbers rise forever; record `n` lives in slot `n & mask` while `first <= n <
/// end`. A number below `first` was evicted (its slot may hold a newer record), so a chain
/// walk stops there; positions along a valid chain are consecutive (`ChannelHistory`).
struct HistoryLog {
    /// One stored event.
    struct Record {
        /// The event's `seq`.
        var seq: Int
        /// Its position among its channel's events (`ChannelHistory.endPosition` when it
        /// was recorded).
        var position: Int
        /// The record number of the channel's previous event (-1: none).
        var previous: Int
        /// Offset of its bytes in the ring.
        var start: Int
        /// Length of the middle part (`,"seq":S,"from":"C",…`); the tail (`,"data":…}\n`)
        /// follows it.
        var middle: UInt32
        /// Length of middle plus tail.
        var length: UInt32
        /// The slot in `owners` of the account charged for it (`user_limits.history_bytes`);
        /// -1 without auth, for the daemon's own events, and once tombstoned or credited.
        /// An index, not a reference, so a record is plain data: copying one (a write into
        /// the ring, its growth) was a value-witness call with a retain and a release, a
        /// fifth of what recording an event cost (callgrind, 1→1 with `history: 100`).
        var owner: Int32
        /// The slot of its channel (`HistorySlots`), so the log can ask whether the record
        /// is past its channel's count; -1 once tombstoned (a tombstoned record needs no
        /// channel, and its slot may be reused). Folding the tombstone in keeps a record at
        /// 48 bytes.
        var channel: Int32

        /// Tombstoned: no longer readable, its bytes kept until the log needs the room.
        var isDead: Bool { channel < 0 }
    }

    /// What one event costs besides its bytes: its record.
    static let entryCost = MemoryLayout<Record>.stride
    /// The smallest record ring allocated.
    static let minimumRecords = 1 << 10
    /// The smallest byte ring allocated.
    static let minimumBytes = 64 * 1024
    /// Past this size a ring that must grow takes everything the cap allows at once: a
    /// growth copies the held events with the loop stopped, so the copies stay below a few
    /// milliseconds, once in the daemon's life (docs/architecture.md, "The compact history
    /// log").
    static let stepwiseGrowthLimit = 4 << 20

    /// The accounts records are charged to (a slot per account with live owned records),
    /// how many live records each slot owns, and the free slots.
    private var owners: [UserAccount?] = []
    private var ownedRecords: [Int] = []
    private var freeOwners: [Int32] = []

    /// The byte ring; its whole length is usable. Both rings are held by hand
    /// (`HistoryRing`): a write through an array checked that it was uniquely referenced and
    /// in bounds, three times per event, 50 instructions of 270 (callgrind, 1→1 with
    /// `history: 100`).
    private var byteRing = HistoryRing<UInt8>(capacity: 0)
    /// `byteRing`'s first byte.
    private var bytes: UnsafeMutablePointer<UInt8>
    /// `byteRing`'s length.
    private(set) var byteCapacity = 0
    /// The record ring (a power of two long, or empty).
    private var recordRing = HistoryRing<Record>(capacity: 0)
    /// `recordRing`'s slots.
    private var records: UnsafeMutablePointer<Record>
    /// `recordRing`'s length.
    private(set) var recordCapacity = 0
    /// Per channel slot (`Record.channel`), the position after its newest record appended:
    /// what `makeRoom` compares a record's position with to tell it is past its channel's
    /// count, without leaving the log (a lookup through the channel was a closure call, a
    /// retain and a release per recorded event).
    private var endsRing = HistoryRing<Int>(capacity: 0)
    private var ends: UnsafeMutablePointer<Int>
    /// `endsRing`'s length.
    private var endsCapacity = 0

    /// An empty log.
    init() {
        bytes = byteRing.base
        records = recordRing.base
        ends = endsRing.base
    }
    /// The oldest record held, and one past the newest.
    private(set) var first = 0
    private(set) var end = 0
    /// Where the next event's bytes go if they fit.
    private var writeAt = 0
    /// Where `makeRoom` placed the event it said yes to (-1: none), so `append` does not
    /// look again: `place` was 33 instructions a publish, called twice (callgrind, 1→1 16 B).
    /// Evicting only adds room, so it stays valid until `append`; a resize moves it.
    private var reserved = -1
    /// Frame bytes plus `entryCost` of every record held, tombstoned ones included.
    private(set) var heldBytes = 0
    /// The part of `heldBytes` that is tombstoned.
    private(set) var deadBytes = 0

    /// Records held.
    var count: Int { end - first }

    /// `recordCapacity - 1`, or 0 while the ring is empty (its one allocated slot).
    private var mask = 0

    /// The record `number`, which must be held.
    func record(_ number: Int) -> Record { records[number & mask] }

    /// Whether `number` is held and not tombstoned.
    func isLive(_ number: Int) -> Bool {
        number >= first && number < end && !records[number & mask].isDead
    }

    /// The middle and tail of a held record, in place in the ring: valid until the log next
    /// changes.
    func parts(of number: Int) -> (middle: UnsafeRawBufferPointer, tail: UnsafeRawBufferPointer) {
        let record = records[number & mask]
        let start = UnsafeRawPointer(bytes + record.start)
        let middle = Int(record.middle)
        return (UnsafeRawBufferPointer(start: start, count: middle),
                UnsafeRawBufferPointer(start: start + middle, count: Int(record.length) - middle))
    }

    // MARK: - Writing

    /// Makes room for an event of `length` bytes: in place, by evicting an oldest record no
    /// account is charged for, or by growing a ring whose oldest record is still readable.
    ///
    /// The rings grow only when the oldest record is one a replay could still send (within
    /// its channel's last `kept` events, and not tombstoned): otherwise it is evicted
    /// instead, so a log whose channels keep few events stays small and in cache, and never
    /// touches the pages of a reservation it does not need. A ring grows by doubling from
    /// `minimumRecords` / `minimumBytes`, and past `stepwiseGrowthLimit` to everything the cap
    /// allows at once: doubling to 64 MiB copied the live events at every step with the loop
    /// stopped, up to 32 MiB at the last, which put every fixed-rate run's p99.9 at about
    /// 1.4 ms (docs/benchmarks.md). The rings are reserved uninitialised, so their pages cost
    /// memory only as events are written into them.
    ///
    /// An oldest record with no owner is evicted here, in the loop: returning to the caller
    /// to evict it, then coming back, was a second call per recorded event once the rings
    /// are full (the steady state of the small rings).
    /// - Parameter kept: the `history` count (a record past its channel's last `kept` events
    ///   is expired).
    /// - Returns: false when the oldest record must go first and its owner be credited
    ///   (`evictOldest`).
    @inline(__always)
    mutating func makeRoom(for length: Int, capacity: Int, keeping kept: Int) -> Bool {
        if count < recordCapacity, let start = place(length) {
            reserved = start
            return true
        }
        return makeRoomSlowly(for: length, capacity: capacity, keeping: kept)
    }

    /// `makeRoom` when a ring is full: evicts, grows, or says the oldest must go.
    @inline(never)
    private mutating func makeRoomSlowly(for length: Int, capacity: Int, keeping kept: Int) -> Bool {
        while true {
            if count == recordCapacity {
                // Held records already take the cap, or the oldest cannot be replayed: it goes.
                if recordCapacity == 0 || count * Self.entryCost < capacity && !oldestIsExpired(keeping: kept) {
                    growRecords(capacity: capacity)
                } else if dropOldestIfUnowned() {
                    dropExpiredRun(keeping: kept)
                    continue
                } else {
                    return false
                }
            }
            if let start = place(length) {
                reserved = start
                return true
            }
            let limit = Swift.max(capacity, length)
            if byteCapacity >= limit || count > 0 && oldestIsExpired(keeping: kept) {
                if dropOldestIfUnowned() {
                    dropExpiredRun(keeping: kept)
                    continue
                }
                return false
            }
            return growBytes(toFit: length, limit: limit)
        }
    }

    /// Doubles the byte ring (`nextByteCapacity`) until the event fits or the ring reaches
    /// `limit`. - Returns: whether it fits.
    private mutating func growBytes(toFit length: Int, limit: Int) -> Bool {
        while byteCapacity < limit {
            resize(to: nextByteCapacity(for: length, limit: limit))
            if let start = place(length) {
                reserved = start
                return true
            }
        }
        return false
    }

    /// Whether the oldest record held can go without losing anything a replay could send:
    /// tombstoned, or past its channel's last `kept` events (`ends`).
    @inline(__always)
    private func oldestIsExpired(keeping kept: Int) -> Bool {
        let oldest = records[first & mask]
        return oldest.isDead || oldest.position < ends[Int(oldest.channel)] &- kept
    }

    /// Evicts the oldest record when no account is charged for it (nothing to credit).
    /// - Returns: whether it did.
    @inline(__always)
    private mutating func dropOldestIfUnowned() -> Bool {
        guard first < end, records[first & mask].owner < 0 else { return false }
        _ = evictOldest()
        return true
    }

    /// Most records `dropExpiredRun` evicts at once.
    static let expiredRunLimit = 16

    /// After a full ring (records or bytes) evicted its oldest record, evicts up to `expiredRunLimit`
    /// more while they are expired (`oldestIsExpired`) and unowned: nothing a replay could
    /// send, so nothing visible goes early, and the next publishes find room on the fast
    /// path. Why: with one channel and the default `history: 100` every publish went through
    /// this slow path to evict one record, ~100 instructions of the ~2,350 a delivery costs
    /// at 1→1 256 B (callgrind).
    private mutating func dropExpiredRun(keeping kept: Int) {
        var left = Self.expiredRunLimit
        while left > 0, first < end, records[first & mask].owner < 0, oldestIsExpired(keeping: kept) {
            _ = evictOldest()
            left -= 1
        }
    }

    /// The byte ring's next size: double (at least `minimumBytes` and room for `length`
    /// besides what is held), or all of `limit` once that passes `stepwiseGrowthLimit`.
    private func nextByteCapacity(for length: Int, limit: Int) -> Int {
        let needed = heldBytes - count * Self.entryCost + length
        var size = Swift.max(Self.minimumBytes, byteCapacity * 2)
        while size < needed { size *= 2 }
        return size >= Self.stepwiseGrowthLimit ? limit : Swift.min(size, limit)
    }

    /// Where an event of `length` bytes goes, or nil when there is no room.
    private func place(_ length: Int) -> Int? {
        guard count > 0 else { return length <= byteCapacity ? 0 : nil }
        let oldest = records[first & mask].start
        if oldest < writeAt {
            if length <= byteCapacity - writeAt { return writeAt }
            if length <= oldest { return 0 }
            return nil
        }
        return length <= oldest - writeAt ? writeAt : nil
    }

    /// Appends an event (after `makeRoom` said yes).
    /// - Returns: its record number and what it costs (frame bytes plus `entryCost`).
    mutating func append(seq: Int, position: Int, previous: Int, middle: UnsafeRawBufferPointer,
                         tail: UnsafeRawBufferPointer, owner: UserAccount?, channel: Int32) -> (number: Int, cost: Int) {
        let length = middle.count + tail.count
        let start = reserved >= 0 ? reserved : place(length) ?? 0
        reserved = -1
        let to = UnsafeMutableRawPointer(bytes + start)
        if let from = middle.baseAddress { to.copyMemory(from: from, byteCount: middle.count) }
        if let from = tail.baseAddress { (to + middle.count).copyMemory(from: from, byteCount: tail.count) }
        writeAt = start + length
        let channelIndex = Int(channel)
        if channelIndex >= endsCapacity { growEnds(toHold: channelIndex) }
        ends[channelIndex] = position &+ 1
        let number = end
        let slot = owner.map { ownerSlot($0) } ?? -1
        records[number & mask] = Record(seq: seq, position: position, previous: previous, start: start,
                                        middle: UInt32(truncatingIfNeeded: middle.count),
                                        length: UInt32(truncatingIfNeeded: length), owner: slot, channel: channel)
        end += 1
        let cost = length + Self.entryCost
        heldBytes += cost
        return (number, cost)
    }

    /// The slot of `account` in `owners` (given one on its first record), with one more
    /// record counted to it.
    private mutating func ownerSlot(_ account: UserAccount) -> Int32 {
        var slot = account.historyOwnerSlot
        if slot < 0 {
            if let free = freeOwners.popLast() {
                slot = free
                owners[Int(slot)] = account
            } else {
                slot = Int32(truncatingIfNeeded: owners.count)
                owners.append(account)
                ownedRecords.append(0)
            }
            account.historyOwnerSlot = slot
        }
        ownedRecords[Int(slot)] += 1
        return slot
    }

    /// One record of owner slot `slot` is no longer charged: the account, whose slot is
    /// freed once it owns no record.
    private mutating func releaseOwner(_ slot: Int32) -> UserAccount? {
        let index = Int(slot)
        guard let account = owners[index] else { return nil }
        ownedRecords[index] -= 1
        if ownedRecords[index] == 0 {
            owners[index] = nil
            account.historyOwnerSlot = -1
            freeOwners.append(slot)
        }
        return account
    }

    // MARK: - Evicting

    /// Drops the oldest record.
    /// - Returns: its cost, and its owner unless it was tombstoned (then it was credited).
    mutating func evictOldest() -> (freed: Int, owner: UserAccount?) {
        guard first < end else { return (0, nil) }
        let slot = first & mask
        let record = records[slot]
        let freed = Int(record.length) + Self.entryCost
        let owner = record.owner >= 0 ? releaseOwner(record.owner) : nil
        records[slot].owner = -1
        first += 1
        heldBytes -= freed
        if record.isDead { deadBytes -= freed }
        if first == end { writeAt = 0 }
        return (freed, record.isDead ? nil : owner)
    }

    /// Tombstones a live record.
    /// - Returns: its cost and owner (to credit), or nil when it was not live.
    mutating func kill(_ number: Int) -> (freed: Int, owner: UserAccount?)? {
        guard isLive(number) else { return nil }
        let slot = number & mask
        let owner = records[slot].owner >= 0 ? releaseOwner(records[slot].owner) : nil
        records[slot].owner = -1
        records[slot].channel = -1
        let freed = Int(records[slot].length) + Self.entryCost
        deadBytes += freed
        return (freed, owner)
    }

    /// Drops everything, releasing the memory (history turned off).
    /// - Parameter credit: called with each live owned record's account and cost.
    mutating func removeAll(crediting credit: (_ owner: UserAccount, _ bytes: Int) -> Void) {
        for number in first..<end {
            let record = records[number & mask]
            if !record.isDead, record.owner >= 0, let owner = owners[Int(record.owner)] {
                credit(owner, Int(record.length) + Self.entryCost)
            }
        }
        for case let owner? in owners { owner.historyOwnerSlot = -1 }
        owners = []
        ownedRecords = []
        freeOwners = []
        first = end
        byteRing = HistoryRing(capacity: 0)
        bytes = byteRing.base
        byteCapacity = 0
        recordRing = HistoryRing(capacity: 0)
        records = recordRing.base
        recordCapacity = 0
        mask = 0
        writeAt = 0
        reserved = -1
        heldBytes = 0
        deadBytes = 0
    }

    // MARK: - Growing

    /// Doubles the record ring (from `minimumRecords`); once a doubled ring would pass
    /// `stepwiseGrowthLimit`, gives it at once the most records `capacity` bytes allow (a
    /// power of two at most `capacity / entryCost`); past that (events so small that more
    /// records fit) it doubles.
    ///
    /// Why not by doubling all the way: each step copies the held records into the new ring
    /// with the loop stopped; at the default 64 MiB the last steps moved 24 and 48 MiB.
    /// Untouched slots cost no memory: a slot's page is touched when a record first lands in
    /// it, and a slot is only read while its record is held (`first..<end`).
    private mutating func growRecords(capacity: Int) {
        let fitting = Swift.max(1, capacity / Self.entryCost)
        let largestPower = 1 << (Int.bitWidth - 1 - fitting.leadingZeroBitCount)
        let doubled = Swift.max(Self.minimumRecords, recordCapacity * 2)
        let size = doubled * Self.entryCost >= Self.stepwiseGrowthLimit ? Swift.max(doubled, largestPower) : doubled
        let newMask = size - 1
        let grown = HistoryRing<Record>(capacity: size)
        for number in first..<end { (grown.base + (number & newMask)).initialize(to: records[number & mask]) }
        recordRing = grown
        records = grown.base
        recordCapacity = size
        mask = newMask
    }

    /// Doubles the table of channel ends until it holds `index`.
    @inline(never)
    private mutating func growEnds(toHold index: Int) {
        var size = Swift.max(64, endsCapacity * 2)
        while size <= index { size *= 2 }
        let grown = HistoryRing<Int>(capacity: size)
        grown.base.initialize(from: ends, count: endsCapacity)
        endsRing = grown
        ends = grown.base
        endsCapacity = size
    }

    /// Where the record ring starts, for tests.
    var recordRingAddress: UnsafeRawPointer { UnsafeRawPointer(records) }

    /// Where the byte ring starts, for tests.
    var byteRingAddress: UnsafeRawPointer { UnsafeRawPointer(bytes) }

    /// Moves the held records' bytes, oldest first, to the start of a ring of `capacity`.
    private mutating func resize(to capacity: Int) {
        let ring = HistoryRing<UInt8>(capacity: capacity)
        var at = 0
        for number in first..<end {
            let slot = number & mask
            let length = Int(records[slot].length)
            (ring.base + at).initialize(from: bytes + records[slot].start, count: length)
            records[slot].start = at
            at += length
        }
        byteRing = ring
        bytes = ring.base
        byteCapacity = capacity
        writeAt = at
    }
}

/// One of the history log's rings, allocated uninitialised (a page costs memory once an event
/// first lands in it) and freed with the ring. `Element` is plain data (`UInt8`,
/// `HistoryLog.Record`), so elements are written without initialising and never
/// deinitialised.
final class HistoryRing<Element> {
    /// The first element.
    let base: UnsafeMutablePointer<Element>

    /// Allocates `capacity` elements (at least one, so `base` always points somewhere).
    init(capacity: Int) { base = .allocate(capacity: Swift.max(1, capacity)) }

    deinit { base.deallocate() }
}
