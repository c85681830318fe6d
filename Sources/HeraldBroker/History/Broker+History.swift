import HeraldWire

/// What `sub` asked to be sent before live events: `current` state and/or a `since` replay.
struct CatchUp {
    /// Send the current state of every matching channel (`current:true`).
    var current = false
    /// Replay history after this `seq` (`since`), concrete channels only.
    var since: Int?
    /// Whether history reached back to `since`, reported in the `ok`.
    var recovered = false
}

extension Broker {
    /// Stores the event just built in `eventShared` (middle, then tail) in the channel's history,
    /// then enforces `history` per channel, the publishing user's `history_bytes` and
    /// `history_bytes` overall. Every eviction takes a channel's oldest event, so what a
    /// channel keeps is always a contiguous run of its latest events and a `since` replay
    /// never skips one in the middle.
    /// - Parameters:
    ///   - channel: the channel the event was sent on.
    ///   - session: the connection whose request produced it; its user is charged.
    func recordHistory(on channel: Channel, from session: Session) {
        let limit = config.history
        guard limit > 0 else {
            if channel.history.count > 0 { forgetHistory(of: channel) }
            return
        }
        retention.nextStamp += 1
        let owner = session.account
        let cost = channel.history.record(
            seq: channel.seq, stamp: retention.nextStamp, middle: eventShared.bytes(0..<eventSplit),
            tail: eventShared.bytes(eventSplit..<eventShared.count), owner: owner)
        retention.historyBytes += cost
        retention.historyEvents += 1
        if !channel.history.isInLedger { retention.ledger.insert(channel, stamp: retention.nextStamp) }
        if let owner {
            owner.historyBytes += cost
            owner.historyEvents += 1
            owner.historyLedger.append(stamp: retention.nextStamp, channel: channel, liveEvents: owner.historyEvents)
        }
        while channel.history.count > limit { evictOldestEvent(of: channel) }
        if let owner, let userLimit = session.user?.limits.historyBytes, owner.historyBytes > userLimit {
            evictHistory(of: owner, downTo: userLimit)
        }
        while retention.historyBytes > config.historyBytes, let oldest = retention.ledger.popOldest() {
            evictOldestEvent(of: oldest)
            if let stamp = oldest.history.oldestStamp { retention.ledger.insert(oldest, stamp: stamp) }
        }
    }

    /// Past a user's `history_bytes`: evicts the user's oldest event, and with it whatever
    /// its channel holds before it (anyone's), until the user is back under. Taking only
    /// channel fronts keeps every channel's history contiguous; the channel chosen each time
    /// is the one holding the user's oldest event (`UserHistoryLedger`), so the user's
    /// newest events stay replayable longest. Each event is evicted once, so this costs
    /// O(1) amortised per event, plus the global ledger's O(log channels) as for any eviction.
    func evictHistory(of account: UserAccount, downTo limit: Int) {
        while account.historyBytes > limit, let oldest = account.historyLedger.oldest() {
            let channel = oldest.channel
            while let stamp = channel.history.oldestStamp, stamp <= oldest.stamp { evictOldestEvent(of: channel) }
        }
    }

    /// Evicts a channel's oldest event and credits its bytes, to its owner too.
    func evictOldestEvent(of channel: Channel) {
        let (freed, owner) = channel.history.evictOldest()
        guard freed > 0 else { return }
        retention.historyBytes -= freed
        retention.historyEvents -= 1
        if let owner { creditHistory(freed, to: owner) }
    }

    /// Drops a channel's whole history, crediting each event's owner.
    func forgetHistory(of channel: Channel) {
        retention.historyEvents -= channel.history.count
        retention.historyBytes -= channel.history.removeAll { owner, bytes in creditHistory(bytes, to: owner) }
    }

    /// Takes one evicted event's bytes off the account that was charged for it.
    private func creditHistory(_ bytes: Int, to owner: UserAccount) {
        owner.historyBytes -= bytes
        owner.historyEvents -= 1
        dropIfEmpty(owner)
    }

    /// Reads `current` and `since` from a `sub` request.
    /// - Throws: `bad_field` for a non-boolean `current`, a bad `since`, or `since` with a pattern.
    func requestedCatchUp(pattern: [UInt8], isWildcard: Bool) throws(HeraldError) -> CatchUp {
        var catchUp = CatchUp()
        catchUp.current = try scanner.bool(.current) ?? false
        guard let since = try scanner.int(.since) else { return catchUp }
        guard since >= 0 else { throw HeraldError(.badField, "field 'since' must be a seq, 0 or more") }
        guard !isWildcard else { throw HeraldError(.badField, "field 'since' needs a concrete channel, not a pattern") }
        catchUp.since = since
        // Cluster mode keeps history in Redis: the `catchUp` script decides
        // (`Broker+ClusterCatchUp.swift`).
        return port.judgeRecovery(self, catchUp, on: pattern)
    }

    /// Whether this node's history still holds every event after `catchUp.since` on
    /// `pattern` (`SingleNodePort`). - Returns: `catchUp` with `recovered` set.
    func judgeRecoveryLocally(_ catchUp: CatchUp, on pattern: [UInt8]) -> CatchUp {
        var catchUp = catchUp
        guard let since = catchUp.since else { return catchUp }
        // Looked up, never made: a `sub` with `since` must not create channel records
        // (they would bypass `max_channels`); a channel without a record has seq 0.
        let seq = channels[pattern]?.seq ?? 0
        if since == seq {
            catchUp.recovered = true
        } else if since < seq, let oldest = channels[pattern]?.history.oldestSeq {
            catchUp.recovered = since >= oldest - 1
        }
        return catchUp
    }

    /// Sends the `current` events, then starts the replay (`Broker+Replay.swift`), to a
    /// subscription just made.
    func sendCatchUp(_ catchUp: CatchUp, to subscription: Subscription) {
        if catchUp.current { sendCurrent(to: subscription) }
        if let since = catchUp.since { startReplay(after: since, to: subscription) }
    }

    /// `kind:"current"` events for every matching channel that holds state, by name.
    ///
    /// A wildcard walks the name directory under the pattern's literal prefix (every channel
    /// holding state has a record), not every retained entry of the daemon.
    private func sendCurrent(to subscription: Subscription) {
        var names: [[UInt8]] = []
        if subscription.isWildcard {
            _ = walkDirectory(matching: subscription.pattern, after: nil, budget: Int.max) { name in
                if store.state(of: name)?.hasContent == true { names.append(name) }
                return true
            }
        } else {
            names = store.state(of: subscription.pattern)?.hasContent == true ? [subscription.pattern] : []
        }
        var middle: [UInt8] = []
        var tail: [UInt8] = []
        for name in names {
            guard subscription.isActive, let state = store.state(of: name) else { return }
            middle.removeAll(keepingCapacity: true)
            middle.appendRaw(#","kind":"current","rev":"#)
            middle.appendInt(state.rev)
            tail.removeAll(keepingCapacity: true)
            tail.appendRaw(#","value":"#)
            state.appendContent(to: &tail)
            tail.appendRaw("}\n")
            _ = deliverExtra(to: subscription, on: channel(named: name), middle[...], replay: false, tail[...])
        }
    }

    /// Appends one event frame for a single subscription (current or replayed), with the
    /// same `max_pending`, `max`, `last` and `dropped` rules as live delivery.
    /// - Returns: whether it was queued.
    func deliverExtra(
        to subscription: Subscription, on channel: Channel, _ middle: ArraySlice<UInt8>, replay: Bool,
        _ tail: ArraySlice<UInt8>
    ) -> Bool {
        var prefix: [UInt8] = []
        channel.appendPrefix(for: subscription, to: &prefix)
        return deliverExtra(to: subscription, prefix: prefix, on: channel, middle, replay: replay, tail)
    }

    /// `deliverExtra` with the frame's `{"event":"CH","sub":"NAME"` already built, so a
    /// replay builds it once for all its events.
    /// - Returns: whether it was queued.
    func deliverExtra(
        to subscription: Subscription, prefix: [UInt8], on channel: Channel, _ middle: ArraySlice<UInt8>,
        replay: Bool, _ tail: ArraySlice<UInt8>
    ) -> Bool {
        let session = subscription.session
        guard subscription.isActive, !session.closeAfterFlush else { return false }
        let isLast = subscription.remaining == 1
        let size = prefix.count + middle.count + subscription.argsFragmentCount + tail.count + 60
        if session.pendingBytes + size > config.maxPending {
            overflow(subscription, of: session)
            return false
        }
        session.reserveOutbound(size, limit: config.maxPending - session.inFlight)
        session.outbound.append(contentsOf: prefix)
        EventMiddle.append(middle, compact: subscription.isCompact, to: &session.outbound)
        if replay { session.outbound.appendRaw(#","replay":true"#) }
        appendExtras(of: subscription, isLast: isLast, to: &session.outbound)
        session.outbound.append(contentsOf: tail)
        delivered(to: subscription, of: session, isLast: isLast)
        return true
    }
}
