import HeraldWire

/// `clients` and `kick` across nodes (docs/cluster.md, "Admin ops"): a `Q` node message of
/// kind `a` to every other live node, as for `presence`: `c AFTER LIMIT` asks for a page of
/// the node's connections (answered as JSON objects, `truncated` when more follow there),
/// `k ID KICKER USER` asks the node holding connection ID to close it (answered with the
/// count as the one entry of the second list).
extension Broker {
    /// Another node's admin question, answered from this node's connections.
    public func adminAnswer(_ question: [UInt8]) -> (entries: [[UInt8]], counts: [[UInt8]], more: Bool) {
        let fields = question.split(separator: 32, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
        switch fields.first {
        case "c":
            guard fields.count >= 3, let after = Int(fields[1]), let limit = Int(fields[2]), limit >= 1,
                  limit <= Broker.maxListLimit else { return ([], [], false) }
            let page = clientsPage(after: after, limit: limit)
            return (page.entries, [], page.more)
        case "k":
            guard fields.count >= 4, let id = Int(fields[1]) else { return ([], [], false) }
            let count = kickHere(id, by: fields[2], user: fields[3])
            flushSystemEvents()
            return ([], [Array(String(count).utf8)], false)
        default:
            return ([], [], false)
        }
    }

    /// Answers a gathered `clients` (this node's page merged with the others' by client id)
    /// or `kick` (the count summed).
    func finishAdminQuery(_ waiting: ClusterState.Waiting, for session: Session, result: ClusterValue) {
        let parts = result.elements ?? []
        guard parts.count == 3 else { return failUnavailable(session, result) }
        let counts = (parts[1].elements ?? []).compactMap(\.bytes).reduce(0) { $0 + (Int(String(decoding: $1, as: UTF8.self)) ?? 0) }
        guard waiting.op == .clients else {
            answer(session, .kick) { out in
                out.appendRaw(#","count":"#)
                out.appendInt(counts)
            }
            return
        }
        let question = waiting.pageQuestion ?? (after: 0, limit: Broker.defaultListLimit, countOnly: false)
        let local = clientsPage(after: question.after, limit: question.limit)
        var entries: [(id: ConnectionID, json: [UInt8])] = local.entries.compactMap { json in
            Self.presenceMemberID(json).map { ($0, json) }
        }
        for entry in (parts[0].elements ?? []).compactMap(\.bytes) {
            if let id = Self.presenceMemberID(entry) { entries.append((id, entry)) }
        }
        entries.sort { $0.id < $1.id }
        let more = local.more || parts[2].int == 1 || entries.count > question.limit
        let shown = Array(entries.prefix(question.limit))
        answerClients(session, entries: shown.map(\.json), next: more ? shown.last?.id : nil)
    }
}
