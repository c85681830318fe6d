import HeraldWire

/// Presence (issue 36; docs/protocol.md, "Presence"): who is in a channel, the `presence`
/// op, and join/leave events on `$presence.CH`, published by the daemon like `$sys` events
/// and kept in that channel's history, so `since` replays them.
///
/// What it costs: nothing for a channel nobody asks presence of (a subscribe or unsubscribe
/// checks one counter while no `$presence` subscription exists anywhere); a roster is built
/// once when someone asks (`presence`, or a subscription matching `$presence.CH`), then a
/// join or leave is O(log members) plus its fan-out to the watchers, and a `presence` answer
/// costs its page. Bounds, decided so: past `presence_max_members` members, or past
/// `presenceEventsPerSecond` joins and leaves in one second on one channel (a user joining
/// and leaving a room 100,000 times a second), watchers get `{"action":"count","count":N}`
/// at most once a second instead of each change, as Pusher's `subscription_count` does.
extension Broker {
    /// The prefix of presence channels.
    static let presencePrefix: [UInt8] = Array("$presence.".utf8)
    /// Join and leave events one channel sends per second before it tells counts instead.
    static let presenceEventsPerSecond = 100

    /// Whether `subscription` makes its connection a member of its channel.
    private func countsForPresence(_ subscription: Subscription) -> Bool {
        !subscription.isWildcard && !subscription.isHandler && !ChannelName.isReserved(subscription.pattern)
    }

    /// Whether `pattern` is on `$presence.…` (a wildcard's first segment never matches `$`).
    public static func isPresencePattern(_ pattern: [UInt8]) -> Bool {
        pattern.count > presencePrefix.count && pattern.starts(with: presencePrefix)
    }

    /// A subscription was indexed.
    func presenceSubscribed(_ subscription: Subscription) {
        let now = lastNow
        if Self.isPresencePattern(subscription.pattern) { presenceWatchers += 1 }
        guard countsForPresence(subscription) else { return }
        let name = subscription.pattern
        let session = subscription.session
        if let roster = presenceRosters[name] {
            if let instance = session.instance, let ghost = roster.ghost(of: session.user.map { Array($0.name.utf8) }, instance: instance) {
                // Back within its grace: the new connection takes the ghost's place silently.
                roster.removeGhost(ghost)
                recordPresenceLeave(name, ghost)
                _ = roster.add(session.id)
                recordPresenceJoin(name, session.id, of: roster)
                return
            }
            if roster.add(session.id) {
                recordPresenceJoin(name, session.id, of: roster)
                presenceChanged(name, roster, joined: true, session: session, now: now)
            }
        } else if isPresenceWatched(name) {
            let roster = buildRoster(name)
            presenceRosters[name] = roster
            if roster.counts[session.id] == 1 { presenceChanged(name, roster, joined: true, session: session, now: now) }
        }
    }

    /// A subscription left the index.
    func presenceUnsubscribed(_ subscription: Subscription) {
        let now = lastNow
        if Self.isPresencePattern(subscription.pattern) { presenceWatchers -= 1 }
        guard countsForPresence(subscription) else { return }
        let name = subscription.pattern
        let session = subscription.session
        let roster: PresenceRoster
        if let existing = presenceRosters[name] {
            guard existing.drop(session.id) else { return }
            roster = existing
        } else {
            guard isPresenceWatched(name) else { return }
            roster = buildRoster(name)
            guard roster.counts[session.id] == nil else {
                presenceRosters[name] = roster
                return
            }
            if !roster.isEmpty { presenceRosters[name] = roster }
        }
        if session.isEnding, config.presenceGraceMs > 0, let instance = session.instance {
            roster.keepAsGhost(session.id, PresenceRoster.Ghost(
                user: session.user.map { Array($0.name.utf8) }, info: session.info, instance: instance,
                until: now + config.presenceGraceMs))
            presenceGraceChannels.insert(name)
            presenceRosters[name] = roster
            return
        }
        recordPresenceLeave(name, session.id)
        presenceChanged(name, roster, joined: false, session: session, now: now)
        if roster.isEmpty { presenceRosters[name] = nil }
    }

    /// Whether any subscription would receive events on `$presence.NAME`.
    private func isPresenceWatched(_ name: [UInt8]) -> Bool {
        if isWatchedElsewhere(name) { return true }
        guard presenceWatchers > 0 else { return false }
        return index.matchCount(for: Self.presencePrefix + name) > 0
    }

    /// The roster of `name` as the index holds it now (its first use; O(subscriptions)).
    private func buildRoster(_ name: [UInt8]) -> PresenceRoster {
        let roster = PresenceRoster()
        for subscription in index.subscriptions(withPattern: name) where countsForPresence(subscription) {
            if roster.add(subscription.session.id) { recordPresenceJoin(name, subscription.session.id, of: roster) }
        }
        return roster
    }

    /// Tells the watchers of `name` a join or leave, or, in count mode or past the budget,
    /// marks the count due.
    private func presenceChanged(_ name: [UInt8], _ roster: PresenceRoster, joined: Bool, session: Session, now: Int) {
        // In event mode before the change: at most the threshold after a join, below it after a leave.
        let inEventMode = joined ? roster.memberCount <= config.presenceMaxMembers : roster.memberCount < config.presenceMaxMembers
        guard inEventMode, spendPresenceEvent(name, now: now) else {
            presenceCountDue.insert(name)
            return
        }
        queuePresenceEvent(name, action: joined ? "join" : "leave", client: session.id,
                           user: session.user.map { Array($0.name.utf8) }, info: session.info)
    }

    /// Counts a join or leave on `name` against this second's budget. - Returns: false when
    /// it is spent (the change is told as a count). Kept apart from the roster, which goes
    /// when it empties: a client joining and leaving makes a new roster each time. Holds the
    /// channels changed in the current second only.
    private func spendPresenceEvent(_ name: [UInt8], now: Int) -> Bool {
        let second = now / 1_000
        if second != presenceSecond {
            presenceSecond = second
            presenceEventsThisSecond.removeAll(keepingCapacity: presenceEventsThisSecond.count < 1_024)
        }
        let spent = presenceEventsThisSecond[name, default: 0]
        guard spent < Self.presenceEventsPerSecond else { return false }
        presenceEventsThisSecond[name] = spent + 1
        return true
    }

    /// Queues `{"action":…,"client":"cN","user":U?,"info":I?}` on `$presence.NAME`.
    private func queuePresenceEvent(_ name: [UInt8], action: StaticString, client: ConnectionID, user: [UInt8]?, info: [UInt8]?) {
        var data: [UInt8] = []
        data.appendRaw(#"{"action":""#)
        data.appendRaw(action)
        data.appendRaw(#"","client":"c"#)
        data.appendInt(client)
        data.append(UInt8(ascii: "\""))
        appendMember(user: user, info: info, to: &data)
        data.append(UInt8(ascii: "}"))
        pendingSystemEvents.append(SystemEvent(channel: Self.presencePrefix + name, data: data, keepsHistory: true))
    }

    /// `,"user":U` and `,"info":I`, each when present.
    private func appendMember(user: [UInt8]?, info: [UInt8]?, to out: inout [UInt8]) {
        if let user {
            out.appendRaw(#","user":"#)
            out.appendJSONString(user)
        }
        if let info {
            out.appendRaw(#","info":"#)
            out.append(contentsOf: info)
        }
    }

    /// Once a second: counts for the channels in count mode whose count changed, and the
    /// leaves of ghosts whose grace ended.
    func tickPresence(now: Int) {
        expireGhosts(now: now)
        guard !presenceCountDue.isEmpty, now - lastPresenceCounts >= 1_000 else { return }
        lastPresenceCounts = now
        let due = presenceCountDue
        presenceCountDue.removeAll()
        for name in due {
            let count = presenceRosters[name]?.memberCount ?? 0
            if let roster = presenceRosters[name] {
                guard roster.announcedCount != count else { continue }
                roster.announcedCount = count
            }
            var data: [UInt8] = []
            data.appendRaw(#"{"action":"count","count":"#)
            data.appendInt(count)
            data.append(UInt8(ascii: "}"))
            pendingSystemEvents.append(SystemEvent(channel: Self.presencePrefix + name, data: data, keepsHistory: true))
        }
    }

    private func expireGhosts(now: Int) {
        guard !presenceGraceChannels.isEmpty else { return }
        for name in presenceGraceChannels {
            guard let roster = presenceRosters[name] else {
                presenceGraceChannels.remove(name)
                continue
            }
            for id in roster.expiredGhosts(now: now) {
                guard let ghost = roster.removeGhost(id) else { continue }
                recordPresenceLeave(name, id)
                if roster.memberCount < config.presenceMaxMembers, spendPresenceEvent(name, now: now) {
                    queuePresenceEvent(name, action: "leave", client: id, user: ghost.user, info: ghost.info)
                } else {
                    presenceCountDue.insert(name)
                }
            }
            if roster.ghosts.isEmpty { presenceGraceChannels.remove(name) }
            if roster.isEmpty { presenceRosters[name] = nil }
        }
    }

    /// `presence {ch, limit?, after?, count_only?}`: the members of a concrete channel, one
    /// page at a time, by client id.
    func answerPresence(_ session: Session) throws(HeraldError) {
        guard let name = try scanner.string(.ch) else { throw HeraldError(.missingField, "missing field 'ch'") }
        try ChannelName.validateConcrete(name)
        if ChannelName.isReserved(name) {
            throw HeraldError(.badChannel, "presence is kept for application channels, not '$' ones")
        }
        let limit = try scanner.int(.limit) ?? Broker.defaultListLimit
        guard limit >= 1, limit <= Broker.maxListLimit else {
            throw HeraldError(.badField, "field 'limit' must be 1 to " + String(Broker.maxListLimit))
        }
        let after = try presenceCursor()
        let countOnly = try scanner.bool(.countOnly) ?? false
        if let cluster { return gatherPresence(session, on: cluster, name, after: after, limit: limit, countOnly: countOnly) }
        let roster = presenceRoster(of: name)
        let page: (ids: [ConnectionID], more: Bool) = countOnly ? ([], false) : roster.page(after: after, limit: limit)
        answer(session, .presence) { out in
            out.appendRaw(#","ch":"#)
            out.appendJSONString(name)
            out.appendRaw(#","count":"#)
            out.appendInt(roster.memberCount)
            guard !countOnly else { return }
            out.appendRaw(#","members":["#)
            for (position, id) in page.ids.enumerated() {
                if position > 0 { out.append(UInt8(ascii: ",")) }
                appendPresenceMember(id, of: roster, to: &out)
            }
            out.append(UInt8(ascii: "]"))
            if page.more, let last = page.ids.last {
                out.appendRaw(#","next":"c"#)
                out.appendInt(last)
                out.append(UInt8(ascii: "\""))
            }
        }
    }

    /// The roster of `name`, built from the index (and kept, unless empty) when it has none.
    func presenceRoster(of name: [UInt8]) -> PresenceRoster {
        if let roster = presenceRosters[name] { return roster }
        let roster = buildRoster(name)
        if !roster.isEmpty { presenceRosters[name] = roster }
        return roster
    }

    /// `after` as a client id (`"c7"`); 0 when absent.
    private func presenceCursor() throws(HeraldError) -> ConnectionID {
        guard let after = try scanner.string(.after) else { return 0 }
        guard after.first == UInt8(ascii: "c"), after.count > 1, after.count <= 20,
              let id = Int(String(decoding: after.dropFirst(), as: UTF8.self)), id >= 0 else {
            throw HeraldError(.badField, "field 'after' must be a client id such as \"c7\" (a 'next' of an earlier answer)")
        }
        return id
    }

    func appendPresenceMember(_ id: ConnectionID, of roster: PresenceRoster, to out: inout [UInt8]) {
        out.appendRaw(#"{"client":"c"#)
        out.appendInt(id)
        out.append(UInt8(ascii: "\""))
        if let ghost = roster.ghosts[id] {
            appendMember(user: ghost.user, info: ghost.info, to: &out)
        } else if let session = sessions[id] {
            appendMember(user: session.user.map { Array($0.name.utf8) }, info: session.info, to: &out)
        }
        out.append(UInt8(ascii: "}"))
    }
}

extension Broker {
    /// Reads `hello`'s `info` (any JSON up to `max_info_bytes`) and its `instance` string.
    func scanInfo(into greeting: inout Greeting) throws(HeraldError) {
        guard let raw = scanner.raw(.info) else { return }
        guard raw.count <= config.maxInfoBytes else {
            throw HeraldError(.limit, "field 'info' is " + String(raw.count) + " bytes; max_info_bytes is "
                + String(config.maxInfoBytes))
        }
        greeting.info = Array(raw)
        guard scanner[.info]?.kind == .object else { return }
        let inner = RequestScanner(maxDepth: 8)
        try inner.scan(raw)
        if let instance = try? inner.string(.instance), !instance.isEmpty, instance.count <= 255 { greeting.instance = instance }
    }
}
