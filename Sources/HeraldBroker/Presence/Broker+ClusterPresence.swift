import HeraldWire

/// Presence across cluster nodes (issue 36; docs/cluster.md, "Presence"). Each node keeps
/// the rosters of its own connections; decided by cost against a Redis record per member:
///
/// - A `presence` answer gathers the nodes' pages the way `locks {ch}` gathers lock lists (a
///   `Q` node message of kind `p` to every live node, their `A` answers merged by client id):
///   each node sends one page at most and its count, so an answer costs a page per node,
///   not the channel's membership, and nothing is written anywhere for a join.
/// - Joins and leaves are published by the member's node through the cluster's publish path
///   (with the `$presence` channel's `seq` and history in Redis), when a watcher anywhere
///   covers `$presence.CH`: the nodes learn the other nodes' `$presence` patterns from the
///   interest mirror (`remotePresenceWatch`).
extension Broker {
    /// Node `node` gained (`added`) or lost a subscription pattern on `$presence.…`.
    public func remotePresenceWatch(_ pattern: [UInt8], node: Int, added: Bool) {
        guard Broker.isPresencePattern(pattern) else { return }
        if added {
            remotePresencePatterns[pattern, default: []].insert(node)
        } else {
            remotePresencePatterns[pattern]?.remove(node)
            if remotePresencePatterns[pattern]?.isEmpty == true { remotePresencePatterns[pattern] = nil }
        }
    }

    /// Node `node` is gone: its `$presence` patterns watch nothing more.
    public func remotePresenceNodeGone(_ node: Int) {
        for (pattern, var nodes) in remotePresencePatterns where nodes.remove(node) != nil {
            remotePresencePatterns[pattern] = nodes.isEmpty ? nil : nodes
        }
    }

    /// Whether another node's subscription covers `$presence.NAME`.
    func isWatchedElsewhere(_ name: [UInt8]) -> Bool {
        guard !remotePresencePatterns.isEmpty else { return false }
        let channel = Broker.presencePrefix + name
        return remotePresencePatterns.keys.contains { ChannelName.matches(pattern: $0, channel: channel) }
    }

    /// Parks a `presence` until every node sent its page (`locksQuery` of kind `p`; the
    /// channel argument carries `AFTER LIMIT COUNTONLY NAME`).
    func gatherPresence(_ session: Session, on cluster: ClusterState, _ name: [UInt8], after: ConnectionID, limit: Int,
                        countOnly: Bool) {
        var question = Array("\(after) \(limit) \(countOnly ? 1 : 0) ".utf8)
        question += name
        park(session, on: cluster, .locksQuery, channel: nil, arguments: [[UInt8(ascii: "p")], question, []], op: .presence,
             claiming: name, pageQuestion: (after, limit, countOnly))
    }

    /// This node's page for another node's `presence` (`AFTER LIMIT COUNTONLY NAME`): each
    /// member as its JSON object, this node's member count, and whether more follow here.
    public func presencePage(for question: [UInt8]) -> (members: [[UInt8]], count: Int, more: Bool) {
        let fields = question.split(separator: 32, maxSplits: 3, omittingEmptySubsequences: false)
        guard fields.count == 4, let after = Int(String(decoding: fields[0], as: UTF8.self)),
              let limit = Int(String(decoding: fields[1], as: UTF8.self)), limit >= 1, limit <= Broker.maxListLimit,
              (try? ChannelName.validateConcrete(Array(fields[3]))) != nil else { return ([], 0, false) }
        let name = Array(fields[3])
        let roster = presenceRoster(of: name)
        guard fields[2].first != UInt8(ascii: "1") else { return ([], roster.memberCount, false) }
        let page = roster.page(after: after, limit: limit)
        let members = page.ids.map { id -> [UInt8] in
            var out: [UInt8] = []
            appendPresenceMember(id, of: roster, to: &out)
            return out
        }
        return (members, roster.memberCount, page.more)
    }

    /// Answers a gathered `presence`: this node's page merged with the others' by client id.
    func finishPresenceQuery(_ waiting: ClusterState.Waiting, of name: [UInt8], for session: Session, result: ClusterValue) {
        let parts = result.elements ?? []
        guard parts.count == 3 else { return failUnavailable(session, result) }
        let question = waiting.pageQuestion ?? (after: 0, limit: Broker.defaultListLimit, countOnly: false)
        let roster = presenceRoster(of: name)
        let local = question.countOnly ? (ids: [ConnectionID](), more: false) : roster.page(after: question.after, limit: question.limit)
        var entries: [(id: ConnectionID, json: [UInt8])] = local.ids.map { id in
            var out: [UInt8] = []
            appendPresenceMember(id, of: roster, to: &out)
            return (id, out)
        }
        for member in (parts[0].elements ?? []).compactMap(\.bytes) {
            if let id = Self.presenceMemberID(member) { entries.append((id, member)) }
        }
        entries.sort { $0.id < $1.id }
        let count = roster.memberCount + (parts[1].elements ?? []).compactMap(\.bytes).reduce(0) {
            $0 + (Int(String(decoding: $1, as: UTF8.self)) ?? 0)
        }
        let more = local.more || parts[2].int == 1 || entries.count > question.limit
        let shown = Array(entries.prefix(question.limit))
        answer(session, .presence) { out in
            out.appendRaw(#","ch":"#)
            out.appendJSONString(name)
            out.appendRaw(#","count":"#)
            out.appendInt(count)
            guard !question.countOnly else { return }
            out.appendRaw(#","members":["#)
            for (position, entry) in shown.enumerated() {
                if position > 0 { out.append(UInt8(ascii: ",")) }
                out.append(contentsOf: entry.json)
            }
            out.append(UInt8(ascii: "]"))
            if more, let last = shown.last {
                out.appendRaw(#","next":"c"#)
                out.appendInt(last.id)
                out.append(UInt8(ascii: "\""))
            }
        }
    }

    /// The client id at the start of a member object (`{"client":"cN"…`).
    static func presenceMemberID(_ member: [UInt8]) -> ConnectionID? {
        let prefix = Array(#"{"client":"c"#.utf8)
        guard member.starts(with: prefix) else { return nil }
        let digits = member.dropFirst(prefix.count).prefix { $0 >= 48 && $0 <= 57 }
        return Int(String(decoding: digits, as: UTF8.self))
    }

    /// Records in Redis that `id` is a member of `name` (`{p}pm:NODE`), with its JSON.
    func recordPresenceJoin(_ name: [UInt8], _ id: ConnectionID, of roster: PresenceRoster) {
        guard let cluster else { return }
        var json: [UInt8] = []
        appendPresenceMember(id, of: roster, to: &json)
        cluster.send(.presenceRecord, arguments: [Array(String(ClusterOwner.node(of: id)).utf8), [UInt8(ascii: "+")],
                                                  Self.presenceField(name, id), json])
    }

    /// Records in Redis that `id` left `name`.
    func recordPresenceLeave(_ name: [UInt8], _ id: ConnectionID) {
        guard let cluster else { return }
        cluster.send(.presenceRecord, arguments: [Array(String(ClusterOwner.node(of: id)).utf8), [UInt8(ascii: "-")],
                                                  Self.presenceField(name, id)])
    }

    /// `CH\nCLIENT`: a member's field in `{p}pm:NODE`.
    static func presenceField(_ name: [UInt8], _ id: ConnectionID) -> [UInt8] {
        var field = name
        field.append(10)
        field.appendInt(id)
        return field
    }

    /// A gone node's members, taken from Redis (field, value pairs): each leaves, once, on
    /// every node (this node won the take), told through the cluster like any presence event.
    public func presenceMembersOfGoneNode(_ entries: [[UInt8]]) {
        var at = 0
        while at + 1 < entries.count {
            let field = entries[at], json = entries[at + 1]
            at += 2
            guard let newline = field.lastIndex(of: 10), json.first == UInt8(ascii: "{") else { continue }
            var data = Array(#"{"action":"leave","#.utf8)
            data += json.dropFirst()
            pendingSystemEvents.append(SystemEvent(channel: Self.presencePrefix + field[..<newline], data: data, keepsHistory: true))
        }
        flushSystemEvents()
    }
}
