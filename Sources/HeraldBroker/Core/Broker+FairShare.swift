import HeraldWire

/// Fair shares (issue 12, section 3): what one user or one connection may take of what
/// every user needs: outbound memory across the daemon (`max_pending_total`), per user
/// (`UserLimits`), and channel records, which are collected once nothing holds them.
extension Broker {
    // MARK: - Outbound memory across connections

    /// Brings the running total of queued and in-flight output up to date for a session
    /// that just got bytes (called as dirty sessions are drained, once per loop pass).
    func accountPending(of session: Session) {
        let pending = session.pendingBytes
        pendingTotal += pending - session.accountedPending
        session.accountedPending = pending
    }

    /// Takes a departing session out of the running total.
    func forgetPending(of session: Session) {
        pendingTotal -= session.accountedPending
        session.accountedPending = 0
    }

    /// Past `max_pending_total`, cuts the connections holding the most output, largest
    /// first, until the total is back under it (the slow-consumer close: an error frame,
    /// queued events dropped). Costs one pass over the sessions, and only when the running
    /// total (which counts bytes written since the last recount) says the cap may be passed.
    func enforcePendingTotal() {
        guard pendingTotal > config.maxPendingTotal else { return }
        recountPending()
        guard pendingTotal > config.maxPendingTotal else { return }
        let heaviest = sessions.values.filter { !$0.closeAfterFlush && $0.pendingBytes > 0 }
            .sorted { $0.pendingBytes > $1.pendingBytes }
        for session in heaviest {
            guard pendingTotal > config.maxPendingTotal else { break }
            disconnectSlowConsumer(session, cap: .daemon)
            accountPending(of: session)
        }
    }

    /// Recomputes the running total exactly (bytes the server wrote since are subtracted).
    func recountPending() {
        var total = 0
        for session in sessions.values {
            session.accountedPending = session.pendingBytes
            total += session.accountedPending
        }
        pendingTotal = total
    }

    /// Per user: past its `pending_bytes`, the user's connection holding the most output is
    /// cut, then the next, until the user is back under. Run from `tick`, which already
    /// visits every session, so it adds no pass of its own.
    func enforcePendingPerUser() {
        guard config.auth.isEnabled else { return }
        var byUser: [String: [Session]] = [:]
        var totals: [String: Int] = [:]
        for session in sessions.values where !session.closeAfterFlush && session.pendingBytes > 0 {
            guard let user = session.user else { continue }
            byUser[user.name, default: []].append(session)
            totals[user.name, default: 0] += session.pendingBytes
        }
        for (name, sessionsOfUser) in byUser {
            guard var total = totals[name], let limit = sessionsOfUser.first?.user?.limits.pendingBytes, total > limit else { continue }
            for session in sessionsOfUser.sorted(by: { $0.pendingBytes > $1.pendingBytes }) {
                guard total > limit else { break }
                let before = session.pendingBytes
                disconnectSlowConsumer(session, cap: .user(limit))
                total -= before - session.pendingBytes
            }
        }
    }

    // MARK: - Per-user accounts

    /// The account of the session's user, made on first use; nil without auth.
    func account(of session: Session) -> UserAccount? {
        guard let user = session.user else { return nil }
        if let known = accounts[user.name] { return known }
        let made = UserAccount(name: user.name)
        accounts[user.name] = made
        return made
    }

    /// Forgets an account nothing is charged to any more.
    func dropIfEmpty(_ account: UserAccount) {
        if account.isEmpty && accounts[account.name] === account { accounts[account.name] = nil }
    }

    /// Refuses a new subscription past the user's `subscriptions`; in cluster mode, past
    /// this node's grant of it, first asks Redis for more (`Broker+ClusterLeases`).
    func admitUserSubscription(named name: [UInt8], in session: Session) throws(HeraldError) {
        guard session.subscriptions[name] == nil, let user = session.user, let account = session.account else { return }
        guard account.subscriptions < user.limits.subscriptions else {
            throw HeraldError(.limit, "user \"" + user.name + "\" holds its limit of "
                + String(user.limits.subscriptions) + " subscriptions (user_limits.subscriptions)")
        }
        try leaseOneOrPark(.subscriptions, used: account.subscriptions, limit: user.limits.subscriptions,
                           user: user.name, for: session)
    }

    /// Refuses a channel record past the user's `channels` (records it made that still
    /// exist); in cluster mode, past this node's grant of it, first asks Redis for more.
    func admitUserChannel(named name: [UInt8], for session: Session) throws(HeraldError) {
        guard channels[name] == nil, let user = session.user, let account = account(of: session) else { return }
        guard account.channels < user.limits.channels else {
            throw HeraldError(.limit, "user \"" + user.name + "\" has created its limit of "
                + String(user.limits.channels) + " channels (user_limits.channels)")
        }
        try leaseOneOrPark(.channels, used: account.channels, limit: user.limits.channels, user: user.name, for: session)
    }

    /// Charges a channel record to the user whose request made it, once.
    func charge(_ channel: Channel, to session: Session) {
        guard channel.creator == nil, let account = account(of: session) else { return }
        channel.creator = account
        account.channels += 1
    }

    // MARK: - Retained bytes per user

    /// The per-user `retained_bytes` check for a state change by `session`'s user that would
    /// leave the channel with `contentBytes` of content (called by `StateStore.apply` once
    /// the daemon-wide limits passed). Like `max_retained_bytes`, only a change that adds
    /// to the user's charge is refused, so a user over a lowered limit can still shrink.
    /// - Returns: the `limit` error, or nil when the change is admitted.
    func retainedRefusal(_ record: StateRecord, contentBytes: Int, by session: Session) -> HeraldError? {
        guard let user = session.user, let account = account(of: session) else { return nil }
        let held = retainedHolders.holding(of: record.channel)
        let before = held?.account === account ? held?.bytes ?? 0 : 0
        let after = Self.retainedCharge(record, contentBytes: contentBytes)
        guard after > before, account.retainedBytes - before + after > user.limits.retainedBytes else { return nil }
        return HeraldError(.limit, "user \"" + user.name + "\" would hold more than its "
            + String(user.limits.retainedBytes) + " bytes of retained state (user_limits.retained_bytes)")
    }

    /// Makes `session`'s user (nobody without auth) the holder of a channel's state after a
    /// change was applied, crediting the previous holder (`RetainedHolders`).
    func rechargeRetained(_ record: StateRecord, contentBytes: Int, by session: Session) {
        let bytes = Self.retainedCharge(record, contentBytes: contentBytes)
        let account = bytes > 0 && session.user != nil ? account(of: session) : nil
        let previous = retainedHolders.replace(record.channel, with: account.map { .init(account: $0, bytes: bytes) })
        account?.retainedBytes += bytes
        if let previous {
            previous.account.retainedBytes -= previous.bytes
            dropIfEmpty(previous.account)
        }
    }

    /// What a channel's state costs its holder after `record`: its name plus its content, as
    /// `max_retained_bytes` counts it; nothing for the tombstone `del` leaves.
    private static func retainedCharge(_ record: StateRecord, contentBytes: Int) -> Int {
        switch record {
        case .delete, .forget: return 0
        default: return record.channel.count + contentBytes
        }
    }

    // MARK: - Channel records

    /// Drops a channel record: its `seq`, history and match cache go; the name leaves the
    /// directory unless a subscription or link still names it; its creator is credited.
    func dropChannelRecord(_ name: [UInt8]) {
        guard let channel = channels.removeValue(forKey: name) else { return }
        channel.isRetired = true
        forgetHistory(of: channel)
        retention.slots.release(channel)
        if let creator = channel.creator {
            creator.channels -= 1
            channel.creator = nil
            dropIfEmpty(creator)
        }
        directoryDrop(name)
        locks.forgetMemo()
    }

    /// Collects channel records nothing holds: no subscription reaches them, no history,
    /// no retained state (not even a tombstone: `sweepTombstones` collects those first, which
    /// frees the record for this sweep), no owner, no link. Visits at most `budget`
    /// names per call from where the last call stopped, so a sweep of millions of records
    /// is spread over ticks and never stalls the loop; it stops sooner once `isOverBudget`
    /// (the server's pass clock, asked every `itemsPerClockRead` names) says so, as a visit
    /// is several lookups in tables of millions (5,000 took 15-20 ms with 400,000 declared
    /// channels). A collected channel's `seq` starts again at 1; nobody can tell, as
    /// nobody subscribes to it and it has no history.
    func sweepChannelRecords(budget: Int? = nil, isOverBudget: () -> Bool = { false }) {
        let budget = budget ?? budgets.sweep
        var idle: [[UInt8]] = []
        var visited = 0
        var last: [UInt8]?
        var stopped = false
        directory.forEach(from: sweepCursor ?? [], excluding: sweepCursor != nil) { name in
            guard visited < budget else {
                stopped = true
                return false
            }
            if visited % Broker.itemsPerClockRead == Broker.itemsPerClockRead - 1 && isOverBudget() {
                stopped = true
                return false
            }
            visited += 1
            last = name
            if let channel = channels[name], isIdle(channel) { idle.append(name) }
            return true
        }
        sweepCursor = stopped ? last : nil
        for name in idle { dropChannelRecord(name) }
    }

    /// How many directory names one sweep visits.
    /// Small enough that a tick's sweep costs a few milliseconds: with a million records a
    /// full round takes a few minutes, which is soon enough for what it is for (records
    /// filling `max_channels` slowly).
    static let sweepBudget = 5_000

    private func isIdle(_ channel: Channel) -> Bool {
        let name = channel.name
        return !ChannelName.isReserved(name) && !hasHistory(channel) && store.state(of: name) == nil
            && instances.owner(of: name) == nil && links[name] == nil && index.matchCount(for: name) == 0
    }

    /// Refuses a subscription whose `args` (`bytes`, raw JSON) would take its connection past
    /// `max_conn_args_bytes`, its user past `user_limits.args_bytes`, or the daemon past
    /// `max_args_total` (issue 32: 100,000 subscriptions with 4,000-byte `args` took 800 MiB).
    /// A subscription replaced by name gives its own back first.
    func admitArgs(_ bytes: Int, replacing old: Subscription?, in session: Session) throws(HeraldError) {
        guard bytes > 0 else { return }
        let freed = old?.args?.count ?? 0
        if session.argsBytes - freed + bytes > config.maxConnArgsBytes {
            throw HeraldError(.limit, "this connection's subscriptions hold max_conn_args_bytes ("
                + String(config.maxConnArgsBytes) + ") bytes of args")
        }
        if let user = session.user, let account = session.account, account.argsBytes - freed + bytes > user.limits.argsBytes {
            throw HeraldError(.limit, "user \"" + user.name + "\" holds its limit of " + String(user.limits.argsBytes)
                + " bytes of args (user_limits.args_bytes)")
        }
        if argsBytesTotal - freed + bytes > config.maxArgsTotal {
            throw HeraldError(.limit, "the daemon's subscriptions hold max_args_total (" + String(config.maxArgsTotal)
                + ") bytes of args")
        }
    }

    /// Adds `bytes` (negative: gives back) of `args` to the connection, its user and the daemon.
    func chargeArgs(_ bytes: Int, to session: Session) {
        guard bytes != 0 else { return }
        session.argsBytes += bytes
        session.account?.argsBytes += bytes
        argsBytesTotal += bytes
    }
}
