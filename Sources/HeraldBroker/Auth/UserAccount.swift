/// What one authenticated user holds now, summed over its connections, kept up to date as
/// things are made and released so checking a `UserLimits` figure is one comparison.
///
/// Accounts are made when a user's first connection authenticates and dropped when nothing
/// is charged to them any more (`Broker.accounts`).
final class UserAccount {
    /// The user's configured name.
    let name: String
    /// Open, authenticated connections.
    var connections = 0
    /// Live subscriptions across its connections.
    var subscriptions = 0
    /// Bytes of their `args`.
    var argsBytes = 0
    /// Channel records it created that still exist.
    var channels = 0
    /// Retained bytes charged to it: the channels whose content its writes last changed
    /// (`RetainedHolders`).
    var retainedBytes = 0
    /// History bytes charged to it: the events its requests put into history that are
    /// still held (frame bytes plus `EventHistory.entryCost` each).
    var historyBytes = 0
    /// How many events `historyBytes` counts.
    var historyEvents = 0
    /// Its events in history, oldest first, for evicting past `history_bytes`.
    var historyLedger = UserHistoryLedger()
    /// Its slot among the history log's owners while records are charged to it, else -1
    /// (`HistoryLog.ownerSlot`).
    var historyOwnerSlot: Int32 = -1

    init(name: String) {
        self.name = name
    }

    /// Whether nothing is charged to the account, so it can be forgotten.
    var isEmpty: Bool {
        connections == 0 && subscriptions == 0 && channels == 0 && retainedBytes == 0 && historyBytes == 0
    }
}
