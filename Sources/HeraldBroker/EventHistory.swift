/// The last events of one channel, kept for `sub` with `since`.
///
/// Each event is stored as the two parts of its frame that do not depend on the subscriber:
/// the middle (`,"seq":S,"from":"C",…`) and the tail (`,"data":…}\n`). Both live in one byte
/// buffer consumed from the front; the buffer and the entry array are compacted when half of
/// them is dead, so a steady stream of events reuses their capacity and allocates nothing.
struct EventHistory {
    /// One stored event.
    struct Entry {
        /// The event's `seq`.
        var seq: Int
        /// Offset of its bytes in `bytes`, counted from the buffer's creation (see `base`).
        var start: Int
        /// Length of the middle part; the tail follows it.
        var middle: Int
        /// Length of middle plus tail.
        var length: Int
    }

    /// Event bytes; `bytes[0]` is at absolute offset `base`.
    private(set) var bytes: [UInt8] = []
    /// The absolute offset of `bytes[0]`.
    private var base = 0
    /// Entries, oldest first from `head`.
    private var entries: [Entry] = []
    /// Index of the oldest live entry.
    private var head = 0

    /// Number of events held.
    var count: Int { entries.count - head }

    /// Bytes held by live events.
    private(set) var liveBytes = 0

    /// The `seq` of the oldest event held, nil when empty.
    var oldestSeq: Int? { head < entries.count ? entries[head].seq : nil }

    /// Stores one event.
    /// - Returns: the bytes it takes.
    mutating func record(seq: Int, middle: [UInt8], tail: [UInt8]) -> Int {
        let start = base + bytes.count
        bytes.append(contentsOf: middle)
        bytes.append(contentsOf: tail)
        let length = middle.count + tail.count
        entries.append(Entry(seq: seq, start: start, middle: middle.count, length: length))
        liveBytes += length
        return length
    }

    /// Drops the oldest event.
    /// - Returns: the bytes freed (0 when empty).
    mutating func evictOldest() -> Int {
        guard head < entries.count else { return 0 }
        let freed = entries[head].length
        head += 1
        liveBytes -= freed
        if head == entries.count {
            base += bytes.count
            bytes.removeAll(keepingCapacity: true)
            entries.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 32 && head * 2 >= entries.count {
            let dead = entries[head].start - base
            bytes.removeFirst(dead)
            base += dead
            entries.removeFirst(head)
            head = 0
        }
        return freed
    }

    /// Drops everything, releasing the memory.
    /// - Returns: the bytes freed.
    mutating func removeAll() -> Int {
        let freed = liveBytes
        base += bytes.count
        bytes = []
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
            let start = entry.start - base
            body(entry.seq, bytes[start..<(start + entry.middle)], bytes[(start + entry.middle)..<(start + entry.length)])
        }
    }
}

/// The order in which events entered any channel's history, for the global byte cap.
///
/// Per-channel count limits evict events too, so entries here may be stale; they are
/// skipped when met and compacted away when they outnumber the live ones.
struct HistoryLedger {
    /// (channel, seq) in arrival order, from `head`.
    private var order: [(channel: Channel, seq: Int)] = []
    private var head = 0

    /// Number of entries, stale ones included.
    var count: Int { order.count - head }

    mutating func append(_ channel: Channel, seq: Int) {
        order.append((channel, seq))
    }

    /// Removes and returns the oldest entry.
    mutating func popOldest() -> (channel: Channel, seq: Int)? {
        guard head < order.count else { return nil }
        let entry = order[head]
        head += 1
        if head == order.count {
            order.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 64 && head * 2 >= order.count {
            order.removeFirst(head)
            head = 0
        }
        return entry
    }

    /// Drops entries whose event is no longer in its channel's history.
    mutating func compact() {
        order = order[head...].filter { entry in
            guard let oldest = entry.channel.history.oldestSeq else { return false }
            return entry.seq >= oldest
        }
        head = 0
    }
}
