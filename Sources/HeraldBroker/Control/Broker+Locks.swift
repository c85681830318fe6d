import HeraldWire

/// `lock`, `unlock` and `locks` (PROTOCOL.md, "Locking"), and the delivery check.
///
/// A lock suppresses deliveries without removing anything: the subscription stays
/// registered, and events that arrive while it is locked are skipped, not queued. Locks
/// belong to the connection that took them (released in `leave`), and name subscriptions
/// by global id, so `lock {sub}` survives the subscription being replaced by a new `sub`
/// with the same name, and a channel-wide lock covers subscriptions made while it holds.
extension Broker {
    /// `lock` / `unlock`: takes or releases the caller's own locks.
    ///
    /// Answers `{"ok":"lock","ch":CH,"subs":[GLOBAL_ID…]}` listing the subscriptions the
    /// lock covers now (for `ch` alone: the current subscriptions whose pattern overlaps
    /// `ch` and that the caller may subscribe to, at most `budgets.lockList` of them, with
    /// `"truncated":true` when there were more); `unlock` adds `"released":N`, the number
    /// of the caller's locks it released.
    func lockOrUnlock(_ session: Session, _ op: Op) throws(HeraldError) {
        if let cluster, cluster.isDown {
            throw HeraldError(.unavailable, "cluster: Redis is unreachable now, and a lock change holds only once every "
                + "node has it; try again")
        }
        let (pattern, wanted, covered, truncated) = try requestedLocks(of: session, taking: op == .lock)
        var released = 0
        if op == .lock { try admitLocks(wanted, for: session) }
        var changed: [Lock] = []
        for lock in wanted {
            if op == .lock {
                if locks.add(lock) { changed.append(lock) }
            } else if locks.remove(lock) {
                released += 1
                changed.append(lock)
            }
            if let key = lock.subscription { refreshLockFlag(key) }
        }
        port.locksChanged(self, changed, added: op == .lock, by: session)
        port.answerLock(self, session, op, pattern: pattern, covered: covered.map(\.globalID), truncated: truncated,
                        released: released)
    }

    /// Writes a `lock`/`unlock` answer.
    func answerLock(_ session: Session, _ op: Op, pattern: [UInt8]?, covered: [[UInt8]], truncated: Bool, released: Int) {
        answer(session, op) { out in
            if let pattern {
                out.appendRaw(#","ch":"#)
                out.appendJSONString(pattern)
            }
            out.appendRaw(#","subs":"#)
            appendJSONStrings(covered, to: &out)
            if truncated { out.appendRaw(#","truncated":true"#) }
            if op == .unlock { appendCounter(&out, "released", released) }
        }
    }

    /// This node's subscriptions a channel-wide lock on `pattern` covers, for a query from
    /// another node (cluster mode), as the user named there may see them.
    public func coveredLists(of pattern: [UInt8], forUserNamed user: [UInt8]) -> (covered: [[UInt8]], truncated: Bool) {
        guard let viewer = viewer(named: user) else { return ([], false) }
        let (covered, truncated) = subscriptions(overlapping: pattern, visibleTo: viewer.user)
        return (covered.map(\.globalID), truncated)
    }

    /// The subscriptions a channel-wide lock on `pattern` covers here, as `session`'s user
    /// may see them: for the answer after the other nodes listed theirs.
    func coveredHere(_ pattern: [UInt8], for session: Session) -> (covered: [[UInt8]], truncated: Bool) {
        let (covered, truncated) = subscriptions(overlapping: pattern, visibleTo: session.user)
        return (covered.map(\.globalID), truncated)
    }

    /// `locks {ch}`: the subscriptions an event on `ch` would reach, split by whether a
    /// lock (anyone's) suppresses that delivery now.
    func answerLocks(_ session: Session) throws(HeraldError) {
        guard let name = try scanner.string(.ch) else { throw HeraldError(.missingField, "missing field 'ch'") }
        try ChannelName.validateConcrete(name)
        port.answerLocks(self, session, on: name)
    }

    /// Writes the `locks` answer.
    func answerLocks(_ session: Session, _ name: [UInt8], lists: (locked: [[UInt8]], unlocked: [[UInt8]])) {
        answer(session, .locks) { out in
            out.appendRaw(#","ch":"#)
            out.appendJSONString(name)
            out.appendRaw(#","locked":"#)
            appendJSONStrings(lists.locked, to: &out)
            out.appendRaw(#","unlocked":"#)
            appendJSONStrings(lists.unlocked, to: &out)
        }
    }

    /// The global ids of this node's subscriptions an event on `name` would reach, split by
    /// whether a lock suppresses that delivery now, in subscription order; only those whose
    /// pattern `viewer` may subscribe to.
    func lockLists(of name: [UInt8], for viewer: AuthUser?) -> (locked: [[UInt8]], unlocked: [[UInt8]]) {
        var matched: [Subscription] = []
        for target in index.targets(for: name) {
            switch target {
            case .single(let subscription): matched.append(subscription)
            case .group(let group): matched.append(contentsOf: group.members)
            }
        }
        matched = matched.filter { mayList($0, to: viewer) }.sorted { $0.serial < $1.serial }
        return (matched.filter { isLocked($0, named: name) }.map(\.globalID),
                matched.filter { !isLocked($0, named: name) }.map(\.globalID))
    }

    /// The same lists for a query from another node (cluster mode), for the user named
    /// there (empty: auth off). A user this node does not know sees nothing.
    public func lockLists(of name: [UInt8], forUserNamed user: [UInt8]) -> (locked: [[UInt8]], unlocked: [[UInt8]]) {
        guard let viewer = viewer(named: user) else { return ([], []) }
        return lockLists(of: name, for: viewer.user)
    }

    /// The user a query from another node names: `user` nil with auth off; nil when auth
    /// is on and this node does not know the name (it then lists nothing).
    private func viewer(named user: [UInt8]) -> (user: AuthUser?, Void)? {
        guard config.auth.isEnabled else { return (nil, ()) }
        let text = String(decoding: user, as: UTF8.self)
        guard let known = config.auth.users.first(where: { $0.name == text }) else { return nil }
        return (known, ())
    }

    /// Whether a lock suppresses delivering the event being fanned out on `channel` to
    /// `subscription`. Callers skip this entirely while no lock exists (`locks.count == 0`).
    func isLocked(_ subscription: Subscription, on channel: Channel) -> Bool {
        if locks.coversAll(channel) { return true }
        return subscription.isLockTarget && locks.covers(SubscriptionKey(subscription), named: channel.name)
    }

    /// The same decision for a channel by name, for queries.
    func isLocked(_ subscription: Subscription, named name: [UInt8]) -> Bool {
        if locks.coversAll(named: name) { return true }
        return subscription.isLockTarget && locks.covers(SubscriptionKey(subscription), named: name)
    }

    /// Marks a new or replaced subscription when a lock already names it.
    func applyLocks(to subscription: Subscription) {
        subscription.isLockTarget = locks.count > 0 && locks.names(SubscriptionKey(subscription))
    }

    /// Releases every lock a departing connection holds.
    ///
    /// The first `inlineLockReleases` go now, the rest in later loop passes
    /// (`Broker+Teardown.swift`), so a connection holding a million locks does not stall
    /// everyone while it leaves.
    func releaseLocks(of session: Session) {
        let detached = locks.detachAll(ownedBy: session.id)
        guard !detached.isEmpty else { return }
        port.locksReleased(self, ownedBy: session.id)
        deferredLocks.append(DetachedLocks(detached))
        continueLockReleases(budget: Broker.inlineLockReleases)
    }

    /// Releases one lock and refreshes the flag of the subscription it named.
    func releaseLock(_ lock: Lock) {
        guard locks.remove(lock) else { return }
        if let key = lock.subscription { refreshLockFlag(key) }
    }

    /// After a reload: releases the connection's locks on patterns its user may no longer
    /// publish on (a `lock {sub}` on its own subscription names no channel and stays).
    /// Costs the connection's own locks.
    func revokeLocks(of session: Session) {
        guard let rule = session.user?.publish, !rule.isUnrestricted else { return }
        var revoked: [Lock] = []
        for lock in locks.owned(by: session.id) {
            guard let pattern = lock.pattern, !rule.permits(pattern: pattern) else { continue }
            locks.remove(lock)
            revoked.append(lock)
            if let key = lock.subscription { refreshLockFlag(key) }
        }
        port.locksRevoked(self, revoked, owner: session.id)
        if locks.count == 0 { locks.forgetMemo() }
    }

    /// Keeps the live subscription's flag in step with the table, so the delivery check
    /// looks the subscription up only when some lock names it.
    func refreshLockFlag(_ key: SubscriptionKey) {
        sessions[key.client]?.subscriptions[key.name]?.isLockTarget = locks.names(key)
    }

    /// Reads the request's lock selector: `sub`, or `ch` with optional `subs`.
    /// - Returns: the channel pattern (nil for `sub`), the locks the request names, and the
    ///   subscriptions to report.
    private func requestedLocks(
        of session: Session, taking: Bool
    ) throws(HeraldError) -> ([UInt8]?, [Lock], [SubscriptionKey], Bool) {
        if let name = try scanner.string(.sub) {
            guard !scanner.isPresent(.ch), !scanner.isPresent(.subs) else {
                throw HeraldError(.badField, "give either 'sub' or 'ch' (with optional 'subs'), not both")
            }
            if taking && session.subscriptions[name] == nil {
                throw HeraldError(.notFound, "no subscription named \"" + String(decoding: name, as: UTF8.self) + "\"")
            }
            let key = SubscriptionKey(client: session.id, name: name)
            return (nil, [Lock(owner: session.id, pattern: nil, subscription: key)], [key], false)
        }
        guard let pattern = try scanner.string(.ch) else {
            throw HeraldError(.missingField, "lock and unlock need 'ch' (with optional 'subs') or 'sub'")
        }
        _ = try ChannelName.validatePattern(pattern)
        if ChannelName.isReserved(pattern) {
            throw HeraldError(.forbidden, "channels starting with '$' are reserved for the daemon")
        }
        guard let ids = try scanner.stringArray(.subs) else {
            let (covered, truncated) = subscriptions(overlapping: pattern, visibleTo: session.user)
            return (pattern, [Lock(owner: session.id, pattern: pattern, subscription: nil)],
                    covered.map(SubscriptionKey.init), truncated)
        }
        var keys: [SubscriptionKey] = []
        for id in ids {
            guard let key = SubscriptionKey(globalID: id) else {
                throw HeraldError(.badField, "'subs' holds \"" + String(decoding: id, as: UTF8.self)
                    + "\", which is not a global id CLIENT/NAME (e.g. c7/menu)")
            }
            if !keys.contains(key) { keys.append(key) }
        }
        return (pattern, keys.map { Lock(owner: session.id, pattern: pattern, subscription: $0) }, keys, false)
    }

    /// The live subscriptions whose pattern overlaps `pattern` and that `viewer` may see, in
    /// creation order: wildcard ones from the index's trie, exact ones from the name
    /// directory under the pattern's literal prefix. The walk stops after `budgets.lockList`
    /// found or `budgets.listScan` names looked at (then the second value is true), so a
    /// `lock` costs what it touches, not every subscription in the daemon (issue 12: it
    /// sorted all of them, 0.43 s with 200k).
    private func subscriptions(overlapping pattern: [UInt8],
                               visibleTo viewer: AuthUser?) -> ([Subscription], Bool) {
        var found: [Subscription] = []
        var truncated = false
        func take(_ subscription: Subscription) -> Bool {
            guard mayList(subscription, to: viewer) else { return true }
            guard found.count < budgets.lockList else {
                truncated = true
                return false
            }
            found.append(subscription)
            return true
        }
        // At most `listScan` wildcard patterns are looked at, as a `channels` walk looks at
        // at most that many names: the answer is a page either way (`truncated`).
        if !index.forEachWildcardSubscription(overlapping: pattern, budget: budgets.listScan, take) { truncated = true }
        if !truncated {
            let cursor = walkDirectory(matching: pattern, after: nil, budget: budgets.listScan) { name in
                var going = true
                for subscription in index.subscriptions(withPattern: name) where going { going = take(subscription) }
                return going
            }
            if cursor != nil { truncated = true }
        }
        return (found.sorted { $0.serial < $1.serial }, truncated)
    }

    /// Whether a subscription may appear in an answer to `viewer` (nil: auth off): only
    /// when the viewer may subscribe to its whole pattern.
    private func mayList(_ subscription: Subscription, to viewer: AuthUser?) -> Bool {
        guard let viewer else { return true }
        return viewer.subscribe.permits(pattern: subscription.pattern)
    }

    private func appendJSONStrings(_ strings: [[UInt8]], to out: inout [UInt8]) {
        out.append(UInt8(ascii: "["))
        for (position, string) in strings.enumerated() {
            if position > 0 { out.append(UInt8(ascii: ",")) }
            out.appendJSONString(string)
        }
        out.append(UInt8(ascii: "]"))
    }
}
