/// Who holds each channel's retained state against `user_limits.retained_bytes` (issue 12).
///
/// The rule: a channel's state is charged, whole, to the user whose write last changed its
/// content (`set`, `append`, `assign`, `splice`), as the bytes `max_retained_bytes` counts
/// for it (its name plus its content's JSON size); that write credits the previous holder.
/// `del` credits the holder and charges nobody: a tombstone costs its name only, its channel
/// record is already charged to its creator (`user_limits.channels`), and it is collected
/// (`Broker+Tombstones.swift`). So a user's charge grows only through its own writes (nobody
/// can push bytes onto another user), a write to a channel someone else filled takes over
/// the whole of it, and the charges together never exceed the store's `retainedBytes`.
/// State restored from disk at start, and state written without auth, is held by nobody
/// until an authenticated user changes it.
///
/// Kept beside the store rather than in `StoredState`: holders are accounts of this run of
/// the daemon, not part of what is persisted, and a channel record can go (an instance
/// channel's removal) while its state stays.
struct RetainedHolders {
    /// A channel's charge: the account holding it and how many bytes were charged.
    struct Holding {
        let account: UserAccount
        let bytes: Int
    }

    private var byChannel: [[UInt8]: Holding] = [:]

    /// Channels whose state someone holds.
    var count: Int { byChannel.count }

    /// The charge for a channel's state, nil when nobody holds it.
    func holding(of name: [UInt8]) -> Holding? { byChannel[name] }

    /// Records a channel's new holder (nil: nobody).
    /// - Returns: the previous holding, whose account the caller credits.
    mutating func replace(_ name: [UInt8], with holding: Holding?) -> Holding? {
        if let holding { return byChannel.updateValue(holding, forKey: name) }
        return byChannel.removeValue(forKey: name)
    }
}
