import HeraldWire

/// Admin ops (issue 37, item 1; docs/protocol.md, "Admin"): `clients` lists every connection,
/// a page at a time in client-id order (`sessionOrder`: a page costs what it lists), and
/// `kick` closes one with `kicked`, logged with who kicked whom. Only users with
/// `admin: true` may (without auth, every connection, as with `stats`). In cluster mode both
/// span the nodes: `clients` gathers the nodes' pages, `kick` asks every node (one holds the
/// connection), the way `presence` and `locks {ch}` do (`Broker+ClusterAdmin`).
extension Broker {
    /// `clients {limit?, after?}`.
    func answerClients(_ session: Session) throws(HeraldError) {
        let limit = try scanner.int(.limit) ?? Broker.defaultListLimit
        guard limit >= 1, limit <= Broker.maxListLimit else {
            throw HeraldError(.badField, "field 'limit' must be 1 to " + String(Broker.maxListLimit))
        }
        let after = try clientIDField(.after) ?? 0
        if let cluster {
            var question = Array("c \(after) \(limit)".utf8)
            question.append(32)
            return park(session, on: cluster, .locksQuery, channel: nil, arguments: [[UInt8(ascii: "a")], question, []],
                        op: .clients, claiming: [], pageQuestion: (after, limit, false))
        }
        let page = clientsPage(after: after, limit: limit)
        answerClients(session, entries: page.entries, next: page.more ? page.last : nil)
    }

    /// Up to `limit` connections after `after`, each as its JSON object, and whether more follow.
    public func clientsPage(after: ConnectionID, limit: Int) -> (entries: [[UInt8]], more: Bool, last: ConnectionID?) {
        let page = sessionOrder.page(after: after, limit: limit)
        let entries = page.ids.compactMap { id in sessions[id].map(clientEntry) }
        return (entries, page.more, page.ids.last)
    }

    /// Writes `{"ok":"clients","clients":[…],"next"?}`.
    func answerClients(_ session: Session, entries: [[UInt8]], next: ConnectionID?) {
        answer(session, .clients) { out in
            out.appendRaw(#","clients":["#)
            for (position, entry) in entries.enumerated() {
                if position > 0 { out.append(UInt8(ascii: ",")) }
                out.append(contentsOf: entry)
            }
            out.append(UInt8(ascii: "]"))
            if let next {
                out.appendRaw(#","next":"c"#)
                out.appendInt(next)
                out.append(UInt8(ascii: "\""))
            }
        }
    }

    /// One connection: `{"client","user","name","addr","transport","subs","pending_bytes","dropped","connected_ms"}`.
    private func clientEntry(_ session: Session) -> [UInt8] {
        var out: [UInt8] = []
        out.appendRaw(#"{"client":"#)
        out.append(contentsOf: session.quotedClientID)
        out.appendRaw(#","user":"#)
        if let user = session.user?.name { out.appendJSONString(Array(user.utf8)) } else { out.appendRaw("null") }
        out.appendRaw(#","name":"#)
        if let name = session.name { out.appendJSONString(name) } else { out.appendRaw("null") }
        out.appendRaw(#","addr":"#)
        out.appendJSONString(session.peer)
        out.appendRaw(#","transport":"#)
        out.appendJSONString(session.transport)
        out.appendRaw(#","subs":"#)
        out.appendInt(session.subscriptions.count)
        out.appendRaw(#","pending_bytes":"#)
        out.appendInt(session.pendingBytes)
        out.appendRaw(#","dropped":"#)
        out.appendInt(session.droppedEvents)
        out.appendRaw(#","connected_ms":"#)
        out.appendInt(max(0, lastNow - session.connectedAt))
        out.append(UInt8(ascii: "}"))
        return out
    }

    /// `kick {client}`.
    func kick(from session: Session) throws(HeraldError) {
        guard let target = try clientIDField(.client) else { throw HeraldError(.missingField, "missing field 'client'") }
        if let cluster, sessions[target] == nil {
            var question = Array("k \(target) ".utf8)
            question += session.clientID
            question.append(32)
            question += Array((session.user?.name ?? "").utf8)
            return park(session, on: cluster, .locksQuery, channel: nil, arguments: [[UInt8(ascii: "a")], question, []],
                        op: .kick, claiming: [])
        }
        let count = kickHere(target, by: String(decoding: session.clientID, as: UTF8.self), user: session.user?.name ?? "")
        answer(session, .kick) { out in
            out.appendRaw(#","count":"#)
            out.appendInt(count)
        }
    }

    /// Closes connection `id` if this node holds it, with `kicked`, and logs who did it.
    /// - Returns: 1 when it was closed, else 0.
    public func kickHere(_ id: ConnectionID, by kicker: String, user: String) -> Int {
        guard let target = sessions[id], !target.closeAfterFlush else { return 0 }
        write(target) { out in
            out.appendRaw(#"{"error":"kicked","message":"#)
            out.appendJSONString(Array(("closed by an admin (" + kicker + (user.isEmpty ? "" : ", user " + user) + ")").utf8))
            out.appendRaw("}\n")
        }
        close(target, now: lastNow)
        auth.log(AuthEvent(.kicked(by: kicker, user: user), client: clientName(target), peer: peerName(target)))
        return 1
    }

    /// A client id field (`"c7"`) as its number; nil when absent.
    private func clientIDField(_ field: RequestField) throws(HeraldError) -> ConnectionID? {
        guard let text = try scanner.string(field) else { return nil }
        guard text.first == UInt8(ascii: "c"), text.count > 1, text.count <= 20,
              let id = Int(String(decoding: text.dropFirst(), as: UTF8.self)), id > 0 else {
            throw HeraldError(.badField, "field '" + field.key + "' must be a client id such as \"c7\"")
        }
        return id
    }
}
