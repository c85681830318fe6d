/// The `pub` ids seen lately (idempotent publish, issue 37 item 4): per channel and id, the
/// first publish's `seq` and `receivers`, until its window ends.
///
/// Bounded twice: an id is forgotten `dedup_window_ms` after it was first seen, and past
/// `max_dedup_ids` the oldest goes first (a client flooding distinct ids shortens everyone's
/// memory, never grows the daemon's). Expiry walks the insertion order from its oldest end,
/// so each id costs O(1) to add and to forget. Nothing here is touched by a `pub` without `id`.
struct DedupTable {
    /// What the first publish with an id got.
    struct Entry {
        let seq: Int
        let receivers: Int
        let expiresAt: Int
    }

    private var entries: [[UInt8]: Entry] = [:]
    /// Keys in insertion order, with the expiry they were inserted with; from `head` on.
    private var order: [(key: [UInt8], expiresAt: Int)] = []
    private var head = 0

    /// How many ids are remembered.
    var count: Int { entries.count }

    /// The key of `id` on `channel`.
    static func key(channel: [UInt8], id: [UInt8]) -> [UInt8] {
        var key = channel
        key.append(0)
        key += id
        return key
    }

    /// The entry for `key`, if it is remembered and its window is still open.
    mutating func find(_ key: [UInt8], now: Int) -> Entry? {
        expire(now: now)
        return entries[key]
    }

    /// Remembers `key` until `entry.expiresAt`, dropping the oldest past `cap`.
    mutating func insert(_ key: [UInt8], _ entry: Entry, cap: Int) {
        guard cap > 0 else { return }
        entries[key] = entry
        order.append((key, entry.expiresAt))
        while entries.count > cap, head < order.count { dropHead() }
        compact()
    }

    /// Forgets every id whose window ended by `now`.
    mutating func expire(now: Int) {
        while head < order.count, order[head].expiresAt <= now { dropHead() }
        compact()
    }

    private mutating func dropHead() {
        let (key, expiresAt) = order[head]
        head += 1
        // A key inserted again later has a later expiry: only its own record removes it.
        if entries[key]?.expiresAt == expiresAt { entries[key] = nil }
    }

    private mutating func compact() {
        if head == order.count {
            order.removeAll(keepingCapacity: order.count < 4_096)
            head = 0
        } else if head >= 1_024, head * 2 >= order.count {
            order.removeFirst(head)
            head = 0
        }
    }
}
