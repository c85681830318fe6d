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
    /// lock covers now (for `ch` alone: every current subscription whose pattern overlaps
    /// `ch`); `unlock` adds `"released":N`, the number of the caller's locks it released.
    func lockOrUnlock(_ session: Session, _ op: Op) throws(HeraldError) {
        let (pattern, wanted, covered) = try requestedLocks(of: session, taking: op == .lock)
        var released = 0
        if op == .lock { try admitLocks(wanted, for: session) }
        for lock in wanted {
            if op == .lock {
                locks.add(lock)
            } else if locks.remove(lock) {
                released += 1
            }
            if let key = lock.subscription { refreshLockFlag(key) }
        }
        answer(session, op) { out in
            if let pattern {
                out.appendRaw(#","ch":"#)
                out.appendJSONString(pattern)
            }
            out.appendRaw(#","subs":["#)
            for (position, key) in covered.enumerated() {
                if position > 0 { out.append(UInt8(ascii: ",")) }
                key.appendQuoted(to: &out)
            }
            out.append(UInt8(ascii: "]"))
            if op == .unlock { appendCounter(&out, "released", released) }
        }
    }

    /// `locks {ch}`: the subscriptions an event on `ch` would reach, split by whether a
    /// lock (anyone's) suppresses that delivery now.
    func answerLocks(_ session: Session) throws(HeraldError) {
        guard let name = try scanner.string(.ch) else { throw HeraldError(.missingField, "missing field 'ch'") }
        try ChannelName.validateConcrete(name)
        var matched: [Subscription] = []
        for target in index.targets(for: name) {
            switch target {
            case .single(let subscription): matched.append(subscription)
            case .group(let group): matched.append(contentsOf: group.members)
            }
        }
        matched.sort { $0.serial < $1.serial }
        let locked = matched.filter { isLocked($0, named: name) }
        let unlocked = matched.filter { !isLocked($0, named: name) }
        answer(session, .locks) { out in
            out.appendRaw(#","ch":"#)
            out.appendJSONString(name)
            out.appendRaw(#","locked":"#)
            appendGlobalIDs(locked, to: &out)
            out.appendRaw(#","unlocked":"#)
            appendGlobalIDs(unlocked, to: &out)
        }
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
    func releaseLocks(of session: Session) {
        for lock in locks.removeAll(ownedBy: session.id) {
            if let key = lock.subscription { refreshLockFlag(key) }
        }
        if locks.count == 0 { locks.forgetMemo() }
    }

    /// Keeps the live subscription's flag in step with the table, so the delivery check
    /// looks the subscription up only when some lock names it.
    private func refreshLockFlag(_ key: SubscriptionKey) {
        sessions[key.client]?.subscriptions[key.name]?.isLockTarget = locks.names(key)
    }

    /// Reads the request's lock selector: `sub`, or `ch` with optional `subs`.
    /// - Returns: the channel pattern (nil for `sub`), the locks the request names, and the
    ///   subscriptions to report.
    private func requestedLocks(
        of session: Session, taking: Bool
    ) throws(HeraldError) -> ([UInt8]?, [Lock], [SubscriptionKey]) {
        if let name = try scanner.string(.sub) {
            guard !scanner.isPresent(.ch), !scanner.isPresent(.subs) else {
                throw HeraldError(.badField, "give either 'sub' or 'ch' (with optional 'subs'), not both")
            }
            if taking && session.subscriptions[name] == nil {
                throw HeraldError(.notFound, "no subscription named \"" + String(decoding: name, as: UTF8.self) + "\"")
            }
            let key = SubscriptionKey(client: session.id, name: name)
            return (nil, [Lock(owner: session.id, pattern: nil, subscription: key)], [key])
        }
        guard let pattern = try scanner.string(.ch) else {
            throw HeraldError(.missingField, "lock and unlock need 'ch' (with optional 'subs') or 'sub'")
        }
        _ = try ChannelName.validatePattern(pattern)
        if ChannelName.isReserved(pattern) {
            throw HeraldError(.forbidden, "channels starting with '$' are reserved for the daemon")
        }
        guard let ids = try scanner.stringArray(.subs) else {
            let covered = allSubscriptions().filter { ChannelName.overlaps($0.pattern, pattern) }.map(SubscriptionKey.init)
            return (pattern, [Lock(owner: session.id, pattern: pattern, subscription: nil)], covered)
        }
        var keys: [SubscriptionKey] = []
        for id in ids {
            guard let key = SubscriptionKey(globalID: id) else {
                throw HeraldError(.badField, "'subs' holds \"" + String(decoding: id, as: UTF8.self)
                    + "\", which is not a global id CLIENT/NAME (e.g. c7/menu)")
            }
            if !keys.contains(key) { keys.append(key) }
        }
        return (pattern, keys.map { Lock(owner: session.id, pattern: pattern, subscription: $0) }, keys)
    }

    /// Every live subscription, in creation order.
    private func allSubscriptions() -> [Subscription] {
        sessions.values.flatMap { $0.subscriptions.values }.sorted { $0.serial < $1.serial }
    }

    private func appendGlobalIDs(_ subscriptions: [Subscription], to out: inout [UInt8]) {
        out.append(UInt8(ascii: "["))
        for (position, subscription) in subscriptions.enumerated() {
            if position > 0 { out.append(UInt8(ascii: ",")) }
            out.appendJSONString(subscription.globalID)
        }
        out.append(UInt8(ascii: "]"))
    }
}
