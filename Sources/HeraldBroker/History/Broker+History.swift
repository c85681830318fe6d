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
    /// Stores the event just built in `eventShared` (middle, then tail) in the history log
    /// (`HistoryLog`), then enforces the publishing user's `history_bytes` and
    /// `history_bytes` overall. A channel's `history` count is applied when reading
    /// (`heldChain`), and when the log is full: an event past it is evicted before the log
    /// grows (`HistoryLog.makeRoom`). Every eviction takes a channel's oldest events first (the log's front, or
    /// a user's oldest event with everything its channel holds before it), so what a channel
    /// keeps is always a contiguous run of its latest events and a `since` replay never skips
    /// one in the middle.
    /// - Parameters:
    ///   - channel: the channel the event was sent on.
    ///   - session: the connection whose request produced it; its user is charged.
    func recordHistory(on channel: Channel, from session: Session) {
        guard config.history > 0 else {
            if retention.log.count > 0 { forgetAllHistory() }
            return
        }
        let middle = eventShared.bytes(0..<eventSplit)
        let tail = eventShared.bytes(eventSplit..<eventShared.count)
        let capacity = config.historyBytes
        let position = channel.history.endPosition
        channel.history.endPosition += 1
        guard middle.count + tail.count + HistoryLog.entryCost <= capacity else {
            // Larger than all of history may hold: its channel's older events cannot be
            // replayed past it, so they go with it.
            forgetHistory(of: channel)
            return
        }
        while !retention.log.makeRoom(for: middle.count + tail.count, capacity: capacity, keeping: config.history) {
            evictOldestEvent()
        }
        let owner = session.account
        let slot = retention.slots.slot(for: channel)
        let (number, cost) = retention.log.append(seq: channel.seq, position: position, previous: channel.history.newest,
                                                  middle: middle, tail: tail, owner: owner, channel: slot)
        channel.history.newest = number
        if let owner {
            owner.historyBytes += cost
            owner.historyEvents += 1
            owner.historyLedger.append(number, liveEvents: owner.historyEvents, in: retention.log)
        }
        while retention.log.heldBytes > capacity { evictOldestEvent() }
        if let owner, let userLimit = session.user?.limits.historyBytes, owner.historyBytes > userLimit {
            evictHistory(of: owner, downTo: userLimit)
        }
    }

    /// Past a user's `history_bytes`: tombstones the user's oldest event, and with it whatever
    /// its channel holds before it (anyone's), until the user is back under. Taking only
    /// channel fronts keeps every channel's history contiguous; the event chosen each time is
    /// the user's oldest (`UserHistoryLedger`), so the user's newest events stay replayable
    /// longest. Each event is tombstoned once, so this costs O(1) amortised per event.
    func evictHistory(of account: UserAccount, downTo limit: Int) {
        while account.historyBytes > limit, let oldest = account.historyLedger.oldest(in: retention.log) {
            killChain(from: oldest)
        }
    }

    /// Tombstones record `number` and every older record of its channel, crediting owners.
    private func killChain(from number: Int) {
        var at = number
        while let (freed, owner) = retention.log.kill(at) {
            if let owner { creditHistory(freed, to: owner) }
            at = retention.log.record(at).previous
        }
    }

    /// Evicts the log's oldest record and credits its bytes to its owner.
    private func evictOldestEvent() {
        let (freed, owner) = retention.log.evictOldest()
        if let owner { creditHistory(freed, to: owner) }
    }

    /// Drops a channel's history, crediting each event's owner; its bytes stay in the log
    /// until it wraps past them.
    func forgetHistory(of channel: Channel) {
        killChain(from: channel.history.newest)
        channel.history.newest = -1
    }

    /// `history` went to 0: the whole log goes, and every channel's chain with it (a chain
    /// whose records are gone is empty).
    private func forgetAllHistory() {
        retention.log.removeAll { owner, bytes in creditHistory(bytes, to: owner) }
    }

    /// Takes one evicted event's bytes off the account that was charged for it.
    private func creditHistory(_ bytes: Int, to owner: UserAccount) {
        owner.historyBytes -= bytes
        owner.historyEvents -= 1
        dropIfEmpty(owner)
    }

    // MARK: - Reading a channel's chain

    /// Whether record `number` is one of `channel`'s readable events: held, not tombstoned,
    /// and within the channel's last `history` events.
    func isHeld(_ number: Int, of channel: Channel) -> Bool {
        retention.log.isLive(number)
            && retention.log.record(number).position >= channel.history.endPosition - config.history
    }

    /// Whether the channel has any readable event.
    func hasHistory(_ channel: Channel) -> Bool {
        isHeld(channel.history.newest, of: channel)
    }

    /// The channel's readable events with a `seq` above `seq` (and a position at or above
    /// `position`), oldest first, as record numbers. Costs what it returns.
    func heldChain(of channel: Channel, afterSeq seq: Int = Int.min, fromPosition position: Int = Int.min) -> [Int] {
        var chain: [Int] = []
        var at = channel.history.newest
        while isHeld(at, of: channel) {
            let record = retention.log.record(at)
            guard record.seq > seq, record.position >= position else { break }
            chain.append(at)
            at = record.previous
        }
        chain.reverse()
        return chain
    }

    /// The `seq` of the channel's oldest readable event, nil when it has none. Walks the
    /// chain: O(history).
    func oldestHeldSeq(of channel: Channel) -> Int? {
        var at = channel.history.newest
        var oldest: Int?
        while isHeld(at, of: channel) {
            let record = retention.log.record(at)
            oldest = record.seq
            at = record.previous
        }
        return oldest
    }

    /// Whether the channel can still replay an event with `seq` at or below `seq`. Walks
    /// back only over the events after it.
    func holdsEvent(of channel: Channel, atOrBelow seq: Int) -> Bool {
        var at = channel.history.newest
        while isHeld(at, of: channel) {
            let record = retention.log.record(at)
            if record.seq <= seq { return true }
            at = record.previous
        }
        return false
    }

    /// Bytes of history held and not tombstoned (the `history_bytes` figure).
    var heldHistoryBytes: Int { retention.log.heldBytes - retention.log.deadBytes }

    // MARK: - Catching up

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
        } else if since < seq, let channel = channels[pattern], let oldest = oldestHeldSeq(of: channel) {
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
        return middle.withUnsafeBytes { middle in
            tail.withUnsafeBytes { tail in
                deliverExtra(to: subscription, prefix: prefix, on: channel, middle, replay: replay, tail)
            }
        }
    }

    /// `deliverExtra` with the frame's `{"event":"CH","sub":"NAME"` already built, so a
    /// replay builds it once for all its events, and the event's parts where they are (a
    /// replay reads them in place in the history log). Nothing here changes the log before
    /// the parts are copied.
    /// - Returns: whether it was queued.
    func deliverExtra(
        to subscription: Subscription, prefix: [UInt8], on channel: Channel, _ middle: UnsafeRawBufferPointer,
        replay: Bool, _ tail: UnsafeRawBufferPointer
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
