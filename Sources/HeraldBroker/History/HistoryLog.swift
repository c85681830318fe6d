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
/// What it costs, decided: limits are applied when reading, not when writing. A record past
/// its channel's `history` count, or tombstoned (a user's `history_bytes`, a dropped channel),
/// keeps its bytes until the log wraps past it; the log holds up to `history_bytes` whenever
/// traffic fills it (before, a channel's ring could hold 2.5× what it counted). Memory is
/// bounded exactly by `history_bytes`: each record's frame bytes plus `entryCost` are counted.
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
        /// Tombstoned: no longer readable, its bytes kept until the log wraps past it.
        var isDead: Bool
    }

    /// What one event costs besides its bytes: its record.
    static let entryCost = MemoryLayout<Record>.stride
    /// The smallest record ring allocated.
    static let minimumRecords = 1 << 10

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

    /// An empty log.
    init() {
        bytes = byteRing.base
        records = recordRing.base
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

    /// Makes room for an event of `length` bytes without evicting: in place, or by giving
    /// the byte ring all of `capacity` at once.
    ///
    /// Why all at once: the ring grew by doubling, and each step copied the live events into
    /// the new ring, touching its pages for the first time: 1–2 ms with the loop stopped at a
    /// few MiB, which put every fixed-rate run's p99.9 at about 1.4 ms (0.3–1.3 ms with
    /// `history: 0`, docs/benchmarks.md). The ring is reserved uninitialised, so its pages
    /// cost memory only as events are written into them, one page at a time, and it is never
    /// copied again unless `history_bytes` grows (a reload).
    /// - Returns: false when the oldest record must go first.
    mutating func makeRoom(for length: Int, capacity: Int) -> Bool {
        if count == recordCapacity {
            // Held records already take the cap: the oldest goes instead.
            guard recordCapacity == 0 || count * Self.entryCost < capacity else { return false }
            growRecords(capacity: capacity)
        }
        if let start = place(length) {
            reserved = start
            return true
        }
        let limit = Swift.max(capacity, length)
        guard byteCapacity < limit else { return false }
        resize(to: limit)
        guard let start = place(length) else { return false }
        reserved = start
        return true
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
                         tail: UnsafeRawBufferPointer, owner: UserAccount?) -> (number: Int, cost: Int) {
        let length = middle.count + tail.count
        let start = reserved >= 0 ? reserved : place(length) ?? 0
        reserved = -1
        let to = UnsafeMutableRawPointer(bytes + start)
        if let from = middle.baseAddress { to.copyMemory(from: from, byteCount: middle.count) }
        if let from = tail.baseAddress { (to + middle.count).copyMemory(from: from, byteCount: tail.count) }
        writeAt = start + length
        let number = end
        let slot = owner.map { ownerSlot($0) } ?? -1
        records[number & mask] = Record(seq: seq, position: position, previous: previous, start: start,
                                        middle: UInt32(truncatingIfNeeded: middle.count),
                                        length: UInt32(truncatingIfNeeded: length), owner: slot, isDead: false)
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
        records[slot].isDead = true
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

    /// Gives the record ring, at once, the most records `capacity` bytes allow (a power of
    /// two at most `capacity / entryCost`), uninitialised; past that (events so small that
    /// more records fit) it doubles.
    ///
    /// Why: the ring grew by doubling from 1,024 records, each step filling the new ring and
    /// copying the held records into it with the loop stopped; at the default 64 MiB the last
    /// steps moved 24 and 48 MiB (the byte ring had the same fault, `makeRoom`). Untouched
    /// slots cost no memory: a slot's page is touched when a record first lands in it, and
    /// a slot is only read while its record is held (`first..<end`).
    private mutating func growRecords(capacity: Int) {
        let fitting = Swift.max(1, capacity / Self.entryCost)
        let largestPower = 1 << (Int.bitWidth - 1 - fitting.leadingZeroBitCount)
        let size = Swift.max(Self.minimumRecords, recordCapacity * 2, largestPower)
        let newMask = size - 1
        let grown = HistoryRing<Record>(capacity: size)
        for number in first..<end { (grown.base + (number & newMask)).initialize(to: records[number & mask]) }
        recordRing = grown
        records = grown.base
        recordCapacity = size
        mask = newMask
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
