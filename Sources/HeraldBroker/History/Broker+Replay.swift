import HeraldWire

/// Flow-controlled `since` replays (issue 13): a replay is queued a window at a time as its
/// connection drains, never all at once.
///
/// How: `sub` answers `ok`, sends `current`, then starts a `ReplayCursor` and queues the
/// first window at once, so a replay that fits one window (nearly all) is complete inside
/// the request as before. The rest is queued by `continueReplays`, which the server runs
/// once per loop pass (through `continueDeferredWork`) for each connection whose queued plus
/// in-flight output fell to half the window (the low-water mark). The replay itself never
/// queues past the window, so it can never push a connection past `max_pending`; a reader
/// that stops reading simply stops the replay, and live traffic on its other subscriptions
/// meets the slow-consumer policy by the normal rules.
///
/// Order: while the cursor runs, the subscription is out of live delivery and the channel's
/// history, where every event is recorded, is the queue: the cursor reads events published
/// after the `sub` from it as well, and the subscription goes live the moment the cursor
/// reaches the history's end. Events that outrun the cursor and leave history before it
/// reaches them are skipped and counted in `dropped:N` on the subscription's next event.
/// With no cursor, nothing here runs per publish: `Channel.refreshTargets` leaves replaying
/// subscriptions out of the cached targets, so the fan-out loop is unchanged.
extension Broker {
    /// The replay window's upper bound. Past a few hundred KiB a bigger window buys nothing
    /// (each window is one write), and it is memory every replaying connection holds.
    static let maxReplayWindow = 1 << 20

    /// The most output a replay lets its connection hold queued plus in flight: half of
    /// `max_pending` (so live events for the same connection still have room), at most
    /// `maxReplayWindow`.
    var replayWindow: Int { Swift.min(config.maxPending / 2, Broker.maxReplayWindow) }

    /// Whether a replay needs a loop pass: one queued bytes in the last pass, or its
    /// connection was about to be flushed (either may have been written at once, with no
    /// socket event to wake the loop), or one waits for a connection that has drained to the
    /// low-water mark, or one was ended and is to go.
    var hasRunnableReplay: Bool {
        replayQueued || replays.contains { isRunnable($0) }
    }

    /// Starts the `since` replay of a subscription just made, right after its `ok` (and
    /// `current` events): the history after `since`, then, seamlessly, live events.
    /// - Parameters:
    ///   - since: the `seq` the client has; events above it are sent.
    ///   - subscription: a concrete-channel subscription (`since` refuses patterns).
    func startReplay(after since: Int, to subscription: Subscription) {
        guard subscription.isActive, let channel = channels[subscription.pattern] else { return }
        let chain = heldChain(of: channel, afterSeq: since)
        guard let oldest = chain.first else { return }
        let cursor = ReplayCursor(subscription: subscription, channel: channel, next: retention.log.record(oldest).position,
                                  subscribedAt: channel.seq)
        cursor.pending = chain
        subscription.isReplaying = true
        channel.cacheGeneration = -1
        if pump(cursor) { replays.append(cursor) }
    }

    /// Queues the next window of every replay whose connection drained to the low-water
    /// mark, and forgets the replays that ended. The server calls it once per loop pass.
    /// - Parameter isOverBudget: the server's pass clock; past it the rest waits a pass.
    func continueReplays(isOverBudget: () -> Bool = { false }) {
        replayQueued = false
        guard !replays.isEmpty else { return }
        var kept: [ReplayCursor] = []
        for cursor in replays {
            guard isRunnable(cursor), !isOverBudget() else {
                kept.append(cursor)
                // Bytes someone else queued (the `sub`'s first window, live traffic) are about
                // to be written in this pass; if the socket takes them at once, no event
                // wakes the loop, so ask for one more pass to look again.
                if cursor.subscription.isActive && cursor.subscription.session.isDirty { replayQueued = true }
                continue
            }
            if pump(cursor, isOverBudget: isOverBudget) { kept.append(cursor) }
        }
        replays = kept
    }

    /// Whether a cursor has something to do now: its connection is at or below the
    /// low-water mark, or its subscription ended (then it is to be forgotten).
    private func isRunnable(_ cursor: ReplayCursor) -> Bool {
        let subscription = cursor.subscription
        // An ended subscription's session may be gone: it is not touched then.
        guard subscription.isActive, !subscription.session.closeAfterFlush else { return true }
        return subscription.session.pendingBytes <= replayWindow / 2
    }

    /// Queues the cursor's next events while they fit in the replay window.
    /// - Returns: whether the cursor has more to send (false: it ended or went live).
    private func pump(_ cursor: ReplayCursor, isOverBudget: () -> Bool = { false }) -> Bool {
        let subscription = cursor.subscription
        let window = replayWindow
        var sent = 0
        while true {
            guard subscription.isActive, !subscription.session.closeAfterFlush, !cursor.channel.isRetired else {
                return finish(cursor)
            }
            guard let number = nextRecord(of: cursor) else { return finish(cursor) }
            let record = retention.log.record(number)
            guard record.seq <= cursor.lastSeq else { return finish(cursor) }
            let event = retention.log.parts(of: number)
            let session = subscription.session
            let size = replayFrameSize(cursor, event.middle.count + event.tail.count)
            // An event larger than the window still goes alone into an empty queue; whether
            // it fits `max_pending` is `deliverExtra`'s question, as for live events.
            if session.pendingBytes > 0 && session.pendingBytes + size > window { return true }
            if sent % Broker.itemsPerClockRead == Broker.itemsPerClockRead - 1 && isOverBudget() { return true }
            cursor.pendingIndex += 1
            cursor.next = record.position + 1
            sent += 1
            let isLive = record.seq > cursor.subscribedAt
            if isLive && !admitsAsLive(subscription, event.middle, on: cursor.channel) { continue }
            _ = deliverExtra(to: subscription, prefix: cursor.prefix, on: cursor.channel, event.middle,
                             replay: !isLive, event.tail)
            replayQueued = true
        }
    }

    /// `history` set to 0 (SIGHUP) while replays run: history is no longer recorded, so a
    /// cursor would miss what is published from now on. Every replaying subscription goes
    /// live at once; the events it had not been sent yet are counted in its `dropped`.
    func endReplaysWithoutHistory() {
        for cursor in replays where cursor.subscription.isActive {
            cursor.subscription.dropped += Swift.max(0, cursor.channel.history.endPosition - cursor.next)
            _ = finish(cursor)
        }
        replays = []
        replayQueued = false
    }

    /// The record of the cursor's next event, or nil when it reached the channel's newest.
    ///
    /// The cursor sends the record numbers it collected from its channel's chain, and
    /// collects again (the events published since) when they run out, so each event is
    /// walked to once. Events the history lost before the cursor reached them (the log
    /// wrapped, `history` passed them, a user's `history_bytes`) are skipped, and counted in
    /// the `dropped` field of the subscription's next event, as for an event the `drop`
    /// policy skipped: positions along a chain are consecutive, so the gap is exact.
    private func nextRecord(of cursor: ReplayCursor) -> Int? {
        let channel = cursor.channel
        while true {
            if cursor.pendingIndex == cursor.pending.count {
                cursor.pending = heldChain(of: channel, fromPosition: cursor.next)
                cursor.pendingIndex = 0
                if cursor.pending.isEmpty {
                    skip(cursor, to: channel.history.endPosition)
                    return nil
                }
            }
            let number = cursor.pending[cursor.pendingIndex]
            if isHeld(number, of: channel) {
                skip(cursor, to: retention.log.record(number).position)
                return number
            }
            cursor.pendingIndex += 1
        }
    }

    /// Counts the events between the cursor and `position` as dropped, and moves it there.
    private func skip(_ cursor: ReplayCursor, to position: Int) {
        guard position > cursor.next else { return }
        cursor.subscription.dropped += position - cursor.next
        cursor.next = position
    }

    /// Ends a replay: the subscription takes live events from the next publish on (the
    /// channel's cached targets are rebuilt to include it).
    /// - Returns: false, so `pump` can end with it.
    private func finish(_ cursor: ReplayCursor) -> Bool {
        cursor.subscription.isReplaying = false
        cursor.channel.cacheGeneration = -1
        return false
    }

    /// The bytes `deliverExtra` reserves for one replayed event of `stored` middle+tail bytes.
    private func replayFrameSize(_ cursor: ReplayCursor, _ stored: Int) -> Int {
        cursor.prefix.count + stored + cursor.subscription.argsFragmentCount + 60
    }

    /// The live-delivery rules for an event published after the `sub` that reaches the
    /// subscription through its cursor: no events to handlers, none of its own connection's
    /// with `echo:false`, none while a lock holds it.
    private func admitsAsLive(_ subscription: Subscription, _ middle: UnsafeRawBufferPointer, on channel: Channel) -> Bool {
        guard !subscription.isHandler else { return false }
        let session = subscription.session
        if !session.echo && Broker.sender(in: middle).elementsEqual(session.quotedClientID) { return false }
        return locks.count == 0 || !isLocked(subscription, on: channel)
    }

    /// The quoted client id in a stored event middle (`,"seq":S,"from":"cN",…`), or an empty
    /// slice when the middle has another shape.
    static func sender<Bytes: RandomAccessCollection<UInt8>>(in middle: Bytes) -> Bytes.SubSequence
    where Bytes.Index == Int {
        let fromKey = Array(#","from":"#.utf8)
        guard middle.count > 7 else { return middle[middle.endIndex...] }
        var at = middle.startIndex + 7
        while at < middle.endIndex, middle[at] >= UInt8(ascii: "0"), middle[at] <= UInt8(ascii: "9") { at += 1 }
        guard middle[at...].starts(with: fromKey) else { return middle[middle.endIndex...] }
        let start = at + fromKey.count
        guard start < middle.endIndex, let close = middle[(start + 1)...].firstIndex(of: UInt8(ascii: "\"")) else {
            return middle[middle.endIndex...]
        }
        return middle[start...close]
    }
}
