/// One user's events in history, oldest first, so `user_limits.history_bytes` can find the
/// user's oldest event without looking at anyone else's (issue 12, section 3).
///
/// Every event a user's request puts into history is appended as `(stamp, channel)`. Stamps
/// are broker-wide and rise with every event, so the queue is in age order by construction:
/// appending costs O(1) and the front is the user's oldest event still held, once entries
/// whose event already left are skipped. An event is still held exactly when its channel is
/// not retired and the channel's oldest stamp is at or below the event's: a channel's history
/// only loses events from its front (or all at once, after which every new stamp is larger).
///
/// Events also leave without the user's doing (a channel's `history` count, the global
/// `history_bytes`, a dropped record), leaving stale entries behind the front. They are
/// compacted away once they outnumber the live ones (plus a little slack), which costs
/// O(entries) and is paid for by the appends that made them: amortised O(1) per event, and
/// at most about twice the user's live events in memory.
struct UserHistoryLedger {
    /// An event of the user: its arrival stamp and the channel whose history holds it.
    struct Item {
        let stamp: Int
        let channel: Channel
    }

    private var items: [Item] = []
    /// Index of the first item not yet popped.
    private var head = 0

    /// Entries held, stale ones included.
    var count: Int { items.count - head }

    /// Notes an event the user just put into history.
    /// - Parameters:
    ///   - stamp: the event's arrival stamp (above every stamp appended before).
    ///   - channel: the channel whose history holds it.
    ///   - liveEvents: how many of the user's events history holds now, this one included;
    ///     decides when stale entries are compacted away.
    mutating func append(stamp: Int, channel: Channel, liveEvents: Int) {
        items.append(Item(stamp: stamp, channel: channel))
        if count > 2 * liveEvents + 64 { compact() }
    }

    /// The user's oldest event still held, skipping (and dropping) entries whose event left.
    /// - Returns: the event's stamp and channel, or nil when the user holds no history.
    mutating func oldest() -> Item? {
        while head < items.count {
            if Self.isHeld(items[head]) {
                if head >= 32 && head * 2 >= items.count {
                    items.removeFirst(head)
                    head = 0
                }
                return items[head]
            }
            head += 1
        }
        items.removeAll(keepingCapacity: true)
        head = 0
        return nil
    }

    /// Whether the event is still in its channel's history.
    private static func isHeld(_ item: Item) -> Bool {
        guard !item.channel.isRetired, let oldest = item.channel.history.oldestStamp else { return false }
        return oldest <= item.stamp
    }

    /// Keeps only the entries whose event is still held.
    private mutating func compact() {
        items = items[head...].filter(Self.isHeld)
        head = 0
    }
}
