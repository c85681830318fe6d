import HeraldWire

extension Broker {
    /// `stats`: the daemon's counters.
    func answerStats(_ session: Session, now: Int) {
        answer(session, .stats) { out in
            if let node = port.node {
                // The figures are this node's own; `node` says which (docs/cluster.md).
                out.appendRaw(#","node":"#)
                out.appendJSONString(Array(node.utf8))
            }
            for figure in statsFigures(now: now) { appendCounter(&out, figure.name, figure.value) }
            for figure in clusterLinkFigures { appendCounter(&out, figure.name, figure.value) }
        }
    }

    /// The page size of `channels` when the request names no `limit`, and the largest.
    static let defaultListLimit = 100
    static let maxListLimit = 1_000
    /// Most directory names one `channels` call looks at, whatever it lists: the bound on
    /// its cost. Past it the answer carries `next` to resume from, as Redis's SCAN does.
    static let listScanBudget = 10_000

    /// `channels {ch?, limit?, after?}`: known channels matching `ch` (default: every
    /// non-`$` channel), in byte order, one page at a time.
    ///
    /// Walks the name directory from the pattern's literal prefix (or from `after`), so a
    /// call costs what it lists plus at most `listScanBudget` names it skips, never the
    /// whole table. `next` is present when more may follow: pass it as `after`.
    func answerChannels(_ session: Session) throws(HeraldError) {
        let filter = try scanner.withString(.ch) { bytes throws(HeraldError) -> [UInt8] in
            _ = try ChannelName.validatePattern(bytes)
            return Array(bytes)
        }
        let limit = try scanner.int(.limit) ?? Broker.defaultListLimit
        guard limit >= 1, limit <= Broker.maxListLimit else {
            throw HeraldError(.badField, "field 'limit' must be 1 to " + String(Broker.maxListLimit))
        }
        let after = try scanner.string(.after)
        var listed: [[UInt8]] = []
        var isFull = false
        let cursor = walkDirectory(matching: filter, after: after, budget: budgets.listScan) { name in
            if listed.count == limit {
                isFull = true
                return false
            }
            listed.append(name)
            return true
        }
        let next = isFull ? listed.last : cursor
        let viewer = session.user
        answer(session, .channels) { out in
            out.appendRaw(#","channels":["#)
            for (position, channel) in listed.enumerated() {
                if position > 0 { out.append(UInt8(ascii: ",")) }
                appendListing(of: channel, for: viewer, to: &out)
            }
            out.append(UInt8(ascii: "]"))
            if let next {
                out.appendRaw(#","next":"#)
                out.appendJSONString(next)
            }
        }
    }

    /// One `channels` entry. What the viewer may not see stays out: a link's target only
    /// when it may subscribe to it, the owner's client id only when the owner is the same
    /// user or the viewer may read `$sys.>` (where client ids are published anyway).
    private func appendListing(of channel: [UInt8], for viewer: AuthUser?, to out: inout [UInt8]) {
        out.appendRaw(#"{"ch":"#)
        out.appendJSONString(channel)
        appendCounter(&out, "subs", index.matchCount(for: channel))
        let owner = instances.owner(of: channel)
        out.appendRaw(#","owner":"#)
        if let owner, mayIdentify(owner, to: viewer) {
            appendOwner(of: channel, to: &out)
        } else {
            out.appendRaw("null")
        }
        out.appendRaw(owner == nil ? #","owned":false"# : #","owned":true"#)
        out.appendRaw(#","has_value":"#)
        out.appendRaw(store.state(of: channel)?.hasContent == true ? "true" : "false")
        if let link = links[channel], mayRead(link.parent, viewer) {
            out.appendRaw(#","link":"#)
            out.appendJSONString(link.parent)
        }
        appendCounter(&out, "seq", channels[channel]?.seq ?? 0)
        out.append(UInt8(ascii: "}"))
    }

    /// Whether `viewer` (nil: auth off) may subscribe to the concrete channel `name`.
    func mayRead(_ name: [UInt8], _ viewer: AuthUser?) -> Bool {
        guard let viewer else { return true }
        return name.withUnsafeBytes { viewer.subscribe.permits(channel: $0) }
    }

    /// Whether `viewer` may learn which connection is `owner`.
    private func mayIdentify(_ owner: ConnectionID, to viewer: AuthUser?) -> Bool {
        guard let viewer else { return true }
        if sessions[owner]?.user?.name == viewer.name { return true }
        return viewer.subscribe.permits(pattern: Array("$sys.>".utf8))
    }

    /// `subs`: the caller's own subscriptions, in creation order.
    func answerSubs(_ session: Session) {
        let listed = session.subscriptions.values.sorted { $0.serial < $1.serial }
        answer(session, .subs) { out in
            out.appendRaw(#","subs":["#)
            for (position, subscription) in listed.enumerated() {
                if position > 0 { out.append(UInt8(ascii: ",")) }
                appendDescription(of: subscription, to: &out)
            }
            out.append(UInt8(ascii: "]"))
        }
    }

    private func appendDescription(of subscription: Subscription, to out: inout [UInt8]) {
        out.appendRaw(#"{"sub":"#)
        out.append(contentsOf: subscription.quotedName)
        out.appendRaw(#","ch":"#)
        out.appendJSONString(subscription.pattern)
        if let group = subscription.group {
            out.appendRaw(#","group":"#)
            out.appendJSONString(group)
        }
        if subscription.isHandler { out.appendRaw(#","handle":true"#) }
        if subscription.isCompact { out.appendRaw(#","compact":true"#) }
        if let max = subscription.max { appendCounter(&out, "max", max) }
        if let remaining = subscription.remaining { appendCounter(&out, "remaining", remaining) }
        if let args = subscription.args {
            out.appendRaw(#","args":"#)
            out.append(contentsOf: args)
        }
        out.append(UInt8(ascii: "}"))
    }

    private func matches(_ pattern: [UInt8], _ name: [UInt8]) -> Bool {
        pattern.withUnsafeBytes { p in name.withUnsafeBytes { ChannelName.matches(pattern: p, channel: $0) } }
    }

    func appendCounter(_ out: inout [UInt8], _ key: String, _ value: Int) {
        out.append(UInt8(ascii: ","))
        out.appendJSONString(key)
        out.append(UInt8(ascii: ":"))
        out.appendInt(value)
    }
}
