import HeraldWire

/// `link`/`unlink`: a channel's next level for signals, overriding "its name minus the last
/// segment" (a pushed screen's next responder is the screen below it, not its parent).
///
/// A link belongs to the connection that made it and goes when that connection closes;
/// another connection linking the same channel is `conflict`; a link that would make the
/// route loop is `cycle`.
extension Broker {
    /// The level after `level`: its link, else its name without the last segment, else none.
    func nextLevel(after level: [UInt8]) -> [UInt8]? {
        if let link = links[level] { return link.parent }
        guard let dot = level.lastIndex(of: UInt8(ascii: ".")) else { return nil }
        return Array(level[..<dot])
    }

    /// The whole route of a signal sent on `channel`. Links are checked for cycles when
    /// made, so the walk ends; the bound is a second guard.
    func route(from channel: [UInt8]) -> [[UInt8]] {
        var levels: [[UInt8]] = [channel]
        var level = channel
        while let next = nextLevel(after: level), levels.count < 1_000 {
            levels.append(next)
            level = next
        }
        return levels
    }

    /// `link {ch, parent}`.
    func link(_ session: Session) throws(HeraldError) {
        let channel = try concreteName(.ch)
        let parent = try concreteName(.parent)
        if let existing = links[channel], existing.owner != session.id, !departedLinkOwners.contains(existing.owner) {
            throw HeraldError(.conflict, "channel is linked by another connection")
        }
        if channel == parent || route(from: parent).contains(channel) {
            throw HeraldError(.cycle, "linking here would make the route of signals loop")
        }
        try admitLink(of: channel, by: session)
        port.link(self, channel, to: parent, for: session)
    }

    /// Sets and answers an admitted `link` on a node alone (`SingleNodePort`).
    func linkLocally(_ channel: [UInt8], to parent: [UInt8], for session: Session) {
        setLink(channel, to: parent, ownedBy: session.id)
        answerLink(session, channel, parent)
    }

    /// Records a link (replacing one of the same channel) and its bookkeeping.
    func setLink(_ channel: [UInt8], to parent: [UInt8], ownedBy owner: ConnectionID) {
        if let existing = links[channel], existing.owner != owner { dropLink(channel, ownedBy: existing.owner) }
        if links[channel] == nil { directoryAdd(channel) }
        links[channel] = ChannelLink(parent: parent, owner: owner)
        linksByOwner[owner, default: []].insert(channel)
    }

    /// `{"ok":"link","ch":…,"parent":…}`.
    func answerLink(_ session: Session, _ channel: [UInt8], _ parent: [UInt8]) {
        answer(session, .link) { out in
            out.appendRaw(#","ch":"#)
            out.appendJSONString(channel)
            out.appendRaw(#","parent":"#)
            out.appendJSONString(parent)
        }
    }

    /// `unlink {ch}`: removes the caller's own link.
    func unlink(_ session: Session) throws(HeraldError) {
        let channel = try concreteName(.ch)
        guard let existing = links[channel] else { throw HeraldError(.notFound, "channel has no link") }
        guard existing.owner == session.id else {
            throw HeraldError(.forbidden, "the link belongs to another connection")
        }
        port.unlink(self, channel, for: session)
    }

    /// Drops and answers the caller's own link on a node alone (`SingleNodePort`).
    func unlinkLocally(_ channel: [UInt8], for session: Session) {
        dropLink(channel, ownedBy: session.id)
        answerUnlink(session, channel)
    }

    /// `{"ok":"unlink","ch":…}`.
    func answerUnlink(_ session: Session, _ channel: [UInt8]) {
        answer(session, .unlink) { out in
            out.appendRaw(#","ch":"#)
            out.appendJSONString(channel)
        }
    }

    /// Drops the links a departing connection made: O(its own links), not O(every link).
    /// They leave its set and the cluster at once, the table a slice per pass (`Broker+Teardown`):
    /// meanwhile a signal may still take such a route, and linking one of those channels again
    /// takes it over (no `conflict` with a connection that is gone).
    func releaseLinks(of session: Session) {
        guard let owned = linksByOwner.removeValue(forKey: session.id) else { return }
        let channels = Array(owned)
        port.linksDropped(self, channels, owner: session.id)
        deferLinkDrops(channels, ownedBy: session.id)
    }

    /// After a reload: drops the connection's links whose channel or parent its user may no
    /// longer publish on. Costs the connection's own links.
    func revokeLinks(of session: Session) {
        guard let rule = session.user?.publish, !rule.isUnrestricted, let owned = linksByOwner[session.id] else { return }
        for channel in owned {
            let parent = links[channel]?.parent ?? []
            let allowed = channel.withUnsafeBytes { rule.permits(channel: $0) }
                && parent.withUnsafeBytes { rule.permits(channel: $0) }
            if !allowed {
                dropLink(channel, ownedBy: session.id)
                port.linksDropped(self, [channel], owner: session.id)
            }
        }
    }

    /// Removes one link and its bookkeeping.
    func dropLink(_ channel: [UInt8], ownedBy owner: ConnectionID) {
        guard links[channel]?.owner == owner else { return }
        links[channel] = nil
        linksByOwner[owner]?.remove(channel)
        if linksByOwner[owner]?.isEmpty == true { linksByOwner[owner] = nil }
        directoryDrop(channel)
    }

    /// A required concrete, non-reserved channel name from `field`.
    func concreteName(_ field: RequestField) throws(HeraldError) -> [UInt8] {
        guard let name = try scanner.string(field) else {
            throw HeraldError(.missingField, "missing field '" + field.key + "'")
        }
        if ChannelName.isReserved(name) {
            throw HeraldError(.forbidden, "channels starting with '$' are reserved for the daemon")
        }
        try ChannelName.validateConcrete(name)
        return name
    }
}

/// A channel's overridden next level and the connection that set it.
struct ChannelLink {
    let parent: [UInt8]
    let owner: ConnectionID
}
