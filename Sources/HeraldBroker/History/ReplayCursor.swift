/// Where one subscription's `since` replay stands: the next history position to send.
///
/// Why a cursor (issue 13): a replay used to be queued whole inside the `sub`, so a history
/// larger than `max_pending` met the slow-consumer policy before the client could read its
/// `ok`, and a retrying client looped forever. A cursor lets the broker queue the replay a
/// window at a time as the connection drains (`Broker+Replay.swift`), so any history that
/// fits the daemon's memory reaches a reader that keeps reading.
///
/// While a cursor exists its subscription is left out of live delivery
/// (`Subscription.isReplaying`): events published meanwhile are recorded in the channel's
/// history like any other and reach the subscription through the cursor, in `seq` order,
/// once each. When the cursor reaches the end of the history the subscription goes live,
/// between two events, so nothing is skipped or sent twice.
final class ReplayCursor {
    /// The subscription being caught up.
    let subscription: Subscription
    /// The channel whose history is replayed (`since` needs a concrete channel).
    let channel: Channel
    /// The channel position of the next event to send (`ChannelHistory.endPosition` counts
    /// them): events before it were sent or counted as dropped.
    var next: Int
    /// Record numbers of the channel's events collected from its chain (`Broker.heldChain`),
    /// oldest first, and the next one to send.
    var pending: [Int] = []
    var pendingIndex = 0
    /// The channel's `seq` when the `sub` was answered: events up to it are marked
    /// `replay:true`; later ones were published after the `sub` and are sent as live events
    /// would have been (same frame, `echo` and lock rules).
    let subscribedAt: Int
    /// The last `seq` this cursor sends. A queue-group member stops at `subscribedAt`: later
    /// events went live to the other members, and sending them here too would deliver them
    /// twice within the group. Unbounded (`Int.max`) for a plain subscription.
    let lastSeq: Int
    /// `{"event":"CH","sub":"NAME"`, built once for every event the replay sends.
    let prefix: [UInt8]

    /// Makes a cursor at history position `next` for a subscription just answered.
    /// - Parameters:
    ///   - subscription: the subscription to catch up (its group decides `lastSeq`).
    ///   - channel: its concrete channel.
    ///   - next: the position of the first event after the `since` asked for.
    ///   - subscribedAt: the channel's `seq` when the `sub` was answered.
    init(subscription: Subscription, channel: Channel, next: Int, subscribedAt: Int) {
        var prefix: [UInt8] = []
        channel.appendPrefix(for: subscription, to: &prefix)
        self.prefix = prefix
        self.subscription = subscription
        self.channel = channel
        self.next = next
        self.subscribedAt = subscribedAt
        self.lastSeq = subscription.group == nil ? Int.max : subscribedAt
    }
}
