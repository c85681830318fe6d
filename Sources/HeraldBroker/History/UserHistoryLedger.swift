/// One user's events in history, oldest first, so `user_limits.history_bytes` can find the
/// user's oldest event without looking at anyone else's (issue 12, section 3).
///
/// Every event a user's request puts into history is appended as its record number in the
/// history log (`HistoryLog`). Record numbers rise with every event, so the queue is in age
/// order by construction: appending costs O(1) and the front is the user's oldest event still
/// held, once entries whose record left (evicted, or tombstoned) are skipped.
///
/// Events also leave without the user's doing (the log wrapping, another user's eviction
/// taking a channel's front, a dropped record), leaving stale entries behind the front. They
/// are compacted away once they outnumber the live ones (plus a little slack), which costs
/// O(entries) and is paid for by the appends that made them: amortised O(1) per event, and
/// at most about twice the user's live events in memory.
struct UserHistoryLedger {
    private var items: [Int] = []
    /// Index of the first item not yet popped.
    private var head = 0

    /// Entries held, stale ones included.
    var count: Int { items.count - head }

    /// Notes an event the user just put into history.
    /// - Parameters:
    ///   - number: the event's record number (above every number appended before).
    ///   - liveEvents: how many of the user's events history holds now, this one included;
    ///     decides when stale entries are compacted away.
    ///   - log: the history log, to tell stale entries.
    mutating func append(_ number: Int, liveEvents: Int, in log: HistoryLog) {
        items.append(number)
        if count > 2 * liveEvents + 64 { compact(log) }
    }

    /// The user's oldest event still held, skipping (and dropping) entries whose record left.
    /// - Returns: its record number, or nil when the user holds no history.
    mutating func oldest(in log: HistoryLog) -> Int? {
        while head < items.count {
            if log.isLive(items[head]) {
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

    /// Keeps only the entries whose record is still held.
    private mutating func compact(_ log: HistoryLog) {
        items = items[head...].filter { log.isLive($0) }
        head = 0
    }
}
