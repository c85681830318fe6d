import HeraldWire
/// The last events of one channel, kept for `sub` with `since`.
///
/// Each event is stored as the two parts of its frame that do not depend on the subscriber:
/// the middle (`,"seq":S,"from":"C",…`) and the tail (`,"data":…}\n`), contiguous, in a
/// ring of bytes: a new event goes after the newest one, or at the ring's start when it does
/// not fit before the end (the gap left there is reused once the oldest events have moved
/// past it). The ring grows (to twice what it must hold, copying the live events once) when
/// an event fits nowhere, and shrinks when a quarter of it is live, so a steady stream of
/// events reuses the same bytes and copies nothing.
///
/// Why a ring (issue 16, row 5): the buffer used to be consumed from the front and compacted
/// with a `memmove` of every live event whenever half of it was dead, which with the default
/// 100 events copied each event's bytes a second time: 11% of the daemon's CPU at 1→1 16 B,
/// 10-19% at 1 KiB and more.
struct EventHistory {
    /// One stored event.
    struct Entry {
        /// The event's `seq`.
        var seq: Int
        /// Broker-wide arrival number, so the global byte cap can find the oldest event.
        var stamp: Int
        /// Offset of its bytes in the ring (`bytes`).
        var start: Int
        /// Length of the middle part; the tail follows it. 32 bits are plenty: a frame is
        /// bounded by `max_line` or `max_value_bytes` (at most 256 MiB each), and the two
        /// halves keep `Entry` at 40 bytes with the owner beside them.
        var middle: UInt32
        /// Length of middle plus tail.
        var length: UInt32
        /// The account of the user whose request produced the event (`user_limits.history_bytes`);
        /// nil without auth and for the daemon's own events.
        var owner: UserAccount?
    }

    /// The ring; its whole length is usable (`bytes.count` is the ring's capacity).
    private(set) var bytes: [UInt8] = []
    /// Where the next event goes if it fits before the ring's end.
    private var writeAt = 0
    /// Entries, oldest first from `head`.
    private var entries: [Entry] = []
    /// Index of the oldest live entry.
    private var head = 0
    /// How many events ever left this history: the absolute position of the oldest one held.
    ///
    /// Positions count every event the history ever held, so a `since` replay can keep its
    /// place as a plain number (`ReplayCursor.next`) while events are added and evicted:
    /// a position below `firstPosition` was evicted, one at `endPosition` is not there yet.
    private(set) var firstPosition = 0

    /// One past the absolute position of the newest event held.
    var endPosition: Int { firstPosition + count }

    /// Number of events held.
    var count: Int { entries.count - head }

    /// Bytes held by live events.
    private(set) var liveBytes = 0

    /// The `seq` of the oldest event held, nil when empty.
    var oldestSeq: Int? { head < entries.count ? entries[head].seq : nil }

    /// The arrival stamp of the oldest event held, nil when empty.
    var oldestStamp: Int? { head < entries.count ? entries[head].stamp : nil }

    /// Whether the channel has an entry in the broker's `HistoryLedger`.
    var isInLedger = false

    /// What one event costs besides its bytes: its `Entry`. Counted so that `history_bytes`
    /// bounds memory, not only payload: for small events the entry is most of the cost.
    static let entryCost = MemoryLayout<Entry>.stride

    /// The smallest ring allocated, and the size below which it is never shrunk.
    static let minimumRing = 256

    /// Frame bytes of the live events (without their entries).
    private var liveFrameBytes: Int { liveBytes - count * Self.entryCost }

    /// Stores one event.
    /// - Parameter owner: the account the event's bytes are charged to, if any.
    /// - Returns: the bytes it takes (its frame bytes plus `entryCost`).
    mutating func record(
        seq: Int, stamp: Int, middle: UnsafeRawBufferPointer, tail: UnsafeRawBufferPointer, owner: UserAccount?
    ) -> Int {
        let length = middle.count + tail.count
        let start = place(length)
        bytes.withUnsafeMutableBytes { ring in
            guard let base = ring.baseAddress else { return }
            if let from = middle.baseAddress { (base + start).copyMemory(from: from, byteCount: middle.count) }
            if let from = tail.baseAddress { (base + start + middle.count).copyMemory(from: from, byteCount: tail.count) }
        }
        writeAt = start + length
        entries.append(Entry(seq: seq, stamp: stamp, start: start, middle: UInt32(truncatingIfNeeded: middle.count),
                             length: UInt32(truncatingIfNeeded: length), owner: owner))
        let cost = length + Self.entryCost
        liveBytes += cost
        return cost
    }

    /// Where an event of `length` bytes goes: after the newest event, at the ring's start,
    /// or, when neither has room, at the end of the live events in a larger ring.
    private mutating func place(_ length: Int) -> Int {
        guard head < entries.count else {
            if length > bytes.count { resize(to: Swift.max(2 * length, Self.minimumRing)) }
            return 0
        }
        let oldest = entries[head].start
        if oldest < writeAt {
            // Live events in one run: room after them, or before them from the start.
            if length <= bytes.count - writeAt { return writeAt }
            if length <= oldest { return 0 }
        } else if length <= oldest - writeAt {
            // Wrapped: the room is between the newest and the oldest.
            return writeAt
        }
        resize(to: Swift.max(2 * (liveFrameBytes + length), Self.minimumRing))
        return writeAt
    }

    /// Moves the live events, oldest first, to the start of a ring of `capacity` bytes.
    private mutating func resize(to capacity: Int) {
        var at = 0
        // The bytes past the live events are never read before an event is written there,
        // so the new ring is not zeroed first (UInt8 is trivial).
        let ring = [UInt8](unsafeUninitializedCapacity: capacity) { target, initialized in
            bytes.withUnsafeBytes { source in
                for k in head..<entries.count {
                    let length = Int(entries[k].length)
                    if length > 0, let to = target.baseAddress, let from = source.baseAddress {
                        UnsafeMutableRawPointer(to + at).copyMemory(from: from + entries[k].start, byteCount: length)
                    }
                    entries[k].start = at
                    at += length
                }
            }
            initialized = capacity
        }
        bytes = ring
        writeAt = at
    }

    /// Drops the oldest event.
    /// - Returns: the bytes freed (0 when empty) and the account they were charged to.
    mutating func evictOldest() -> (freed: Int, owner: UserAccount?) {
        guard head < entries.count else { return (0, nil) }
        let freed = Int(entries[head].length) + Self.entryCost
        let owner = entries[head].owner
        // Only an owned event is written to (most have no owner: no auth).
        if owner != nil { entries[head].owner = nil }
        head += 1
        firstPosition += 1
        liveBytes -= freed
        if head == entries.count {
            entries.removeAll(keepingCapacity: true)
            head = 0
            writeAt = 0
        } else if head >= 32 && head * 2 >= entries.count {
            entries.removeFirst(head)
            head = 0
        }
        // A ring a quarter live (a burst of large events over, or a cap evicting) shrinks.
        if bytes.count > Self.minimumRing && liveFrameBytes * 4 < bytes.count {
            resize(to: Swift.max(2 * liveFrameBytes, Self.minimumRing))
        }
        return (freed, owner)
    }

    /// Drops everything, releasing the memory.
    /// - Parameter credit: called with each owned event's account and bytes, oldest first.
    /// - Returns: the bytes freed.
    mutating func removeAll(crediting credit: (_ owner: UserAccount, _ bytes: Int) -> Void) -> Int {
        for entry in entries[head...] {
            if let owner = entry.owner { credit(owner, Int(entry.length) + Self.entryCost) }
        }
        let freed = liveBytes
        firstPosition += count
        bytes = []
        writeAt = 0
        entries = []
        head = 0
        liveBytes = 0
        return freed
    }

    /// Calls `body` with the middle and tail of every event with `seq` above `after`, oldest first.
    func forEach(after: Int, _ body: (_ seq: Int, _ middle: ArraySlice<UInt8>, _ tail: ArraySlice<UInt8>) -> Void) {
        var k = head
        while k < entries.count {
            let entry = entries[k]
            k += 1
            guard entry.seq > after else { continue }
            let start = entry.start
            let middle = start + Int(entry.middle)
            body(entry.seq, bytes[start..<middle], bytes[middle..<(start + Int(entry.length))])
        }
    }
}

extension EventHistory {
    /// The absolute position of the oldest event held with `seq` above `after` (`endPosition`
    /// when there is none). Binary search: entries are in `seq` order.
    func position(after seq: Int) -> Int {
        var low = head
        var high = entries.count
        while low < high {
            let mid = (low + high) / 2
            if entries[mid].seq > seq { high = mid } else { low = mid + 1 }
        }
        return firstPosition + (low - head)
    }

    /// The event at an absolute position, which must be in `firstPosition..<endPosition`.
    /// - Returns: its `seq`, middle and tail (slices of the history's buffer).
    func event(at position: Int) -> (seq: Int, middle: ArraySlice<UInt8>, tail: ArraySlice<UInt8>) {
        let entry = entries[head + position - firstPosition]
        let start = entry.start
        let middle = start + Int(entry.middle)
        return (entry.seq, bytes[start..<middle], bytes[middle..<(start + Int(entry.length))])
    }
}

/// The channels holding history, ordered by the age of their oldest event, for the global
/// byte cap (`history_bytes`).
///
/// A min-heap keyed by the oldest event's arrival stamp, with at most one entry per channel
/// (`EventHistory.isInLedger`). Keys go stale when a channel's own count limit evicts its
/// oldest event; since that only makes the true key larger, a popped entry is checked and
/// pushed back with its true key when stale. So a publish costs nothing here unless its
/// channel's history was empty, and an eviction for the cap costs O(log channels).
struct HistoryLedger {
    private var heap: [(stamp: Int, channel: Channel)] = []

    /// Number of channels in the heap.
    var count: Int { heap.count }

    /// Adds a channel whose history just became non-empty.
    mutating func insert(_ channel: Channel, stamp: Int) {
        channel.history.isInLedger = true
        heap.append((stamp, channel))
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child].stamp < heap[parent].stamp else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    /// The channel holding the globally oldest event, taken out of the heap (the caller
    /// inserts it again if it still holds history after evicting).
    mutating func popOldest() -> Channel? {
        while let (stamp, channel) = popMin() {
            channel.history.isInLedger = false
            guard let oldest = channel.history.oldestStamp else { continue }
            if oldest == stamp { return channel }
            insert(channel, stamp: oldest)
        }
        return nil
    }

    private mutating func popMin() -> (stamp: Int, channel: Channel)? {
        guard !heap.isEmpty else { return nil }
        heap.swapAt(0, heap.count - 1)
        let top = heap.removeLast()
        var parent = 0
        while true {
            let left = 2 * parent + 1
            guard left < heap.count else { break }
            var smallest = left
            if left + 1 < heap.count && heap[left + 1].stamp < heap[left].stamp { smallest = left + 1 }
            guard heap[smallest].stamp < heap[parent].stamp else { break }
            heap.swapAt(parent, smallest)
            parent = smallest
        }
        return top
    }
}
