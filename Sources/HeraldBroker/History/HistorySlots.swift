/// Numbers for the channels with events in the history log: each record carries its
/// channel's (`HistoryLog.Record.channel`), so the log can tell whether its oldest record is
/// past its channel's `history` count before it grows (`HistoryLog.makeRoom`, which keeps
/// each slot's end position).
///
/// A channel takes a slot with its first recorded event and gives it back when it is
/// dropped (`Broker.dropChannelRecord`), after its records were tombstoned: a tombstoned
/// record names no slot, so a reused slot is never read for the channel that held it before.
/// A channel dropped frees its slot at once, so a user creating and dropping channels reuses
/// slots: the table is as large as the most channels that held events at once.
struct HistorySlots {
    /// Slots ever handed out (in use or free).
    private(set) var tableSize = 0
    /// Free slots, reused before new ones.
    private var free: [Int32] = []

    /// Slots in use.
    var count: Int { tableSize - free.count }

    /// The channel's slot, taking one on its first event.
    @inline(__always)
    mutating func slot(for channel: Channel) -> Int32 {
        if channel.history.slot >= 0 { return channel.history.slot }
        return take(for: channel)
    }

    @inline(never)
    private mutating func take(for channel: Channel) -> Int32 {
        let slot: Int32
        if let reused = free.popLast() {
            slot = reused
        } else {
            slot = Int32(truncatingIfNeeded: tableSize)
            tableSize += 1
        }
        channel.history.slot = slot
        return slot
    }

    /// Gives the channel's slot back (it was dropped, its records tombstoned).
    mutating func release(_ channel: Channel) {
        let slot = channel.history.slot
        guard slot >= 0 else { return }
        free.append(slot)
        channel.history.slot = -1
    }
}
