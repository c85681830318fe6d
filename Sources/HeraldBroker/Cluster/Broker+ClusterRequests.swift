import HeraldWire

/// `req` and `reply` in cluster mode (docs/cluster.md, "Requests and replies").
///
/// A `req` waits on the requester's node (its timeout is local) and goes through Redis like
/// a `pub`, with a reply token whose first 8 hex digits name the requester's node. The engine
/// answers `no_responders` at once when its routing table has no node for the channel. A
/// `reply` is checked where it is sent (with auth on, against the connections the request
/// was delivered to on that node) and goes straight to the requester's node; with a `rid`
/// the replier learns from that node whether its reply was the first.
extension Broker {
    /// Cluster mode's `req` after the checks of `request`: registers the pending request and
    /// its deadline here and queues the event for Redis.
    func clusterRequest(_ cluster: ClusterState, from session: Session, now: Int, timeoutMs: Int) throws(HeraldError) {
        let channel = try publishChannel(for: session)
        let token = ReplyToken(node: cluster.nodeIndex, random: randomWord)
        var hex: [UInt8] = []
        token.appendHex(to: &hex)
        let pending = PendingRequest(token: token, requester: session, channel: channel, recipients: nil,
                                     rid: current.ridRaw.map { Array($0) }, timeoutMs: timeoutMs)
        let id = requests.add(pending)
        deadlines.schedule(at: now + timeoutMs, kind: .request, id: id)
        cluster.enqueue(ClusterState.Event(channel: channel.name, from: session.id, data: scanner.raw(.data).map { Array($0) },
                                           receipt: 0, replyToken: hex, requestTimeoutMs: timeoutMs, keepsHistory: false))
    }

    /// Cluster mode's `reply`: checks the right to reply here, then answers a request of this
    /// node at once or queues the reply for the requester's node.
    /// - Throws: `forbidden` (auth on) when the request was not delivered to this connection
    ///   on this node, or its user may not publish on the request's channel.
    func clusterReply(_ cluster: ClusterState, from session: Session) throws(HeraldError) {
        guard scanner.isPresent(.to) else { throw HeraldError(.missingField, "missing field 'to'") }
        let parsed = try scanner.withString(.to) { bytes throws(HeraldError) in ReplyToken(hex: bytes) }
        guard let token = parsed ?? nil else { return answerReply(session, delivered: false) }
        if config.auth.isEnabled {
            // A token never delivered on this node (or whose request's time has run out) is
            // refused too: this node cannot tell a live request of another node from an old one.
            guard let entry = cluster.delivered.entry(for: token), entry.recipients.contains(session.id) else {
                throw HeraldError(.forbidden, "this connection was not sent the request it replies to")
            }
            guard mayPublish(session, to: entry.channel) else {
                throw HeraldError(.forbidden, "no publish permission for \""
                    + String(decoding: entry.channel, as: UTF8.self) + "\", the request's channel")
            }
        }
        let data = scanner.raw(.data)
        if token.node == cluster.nodeIndex {
            let delivered = answerRequest(token, replier: session.id, data: data)
            return answerReply(session, delivered: delivered)
        }
        var hex: [UInt8] = []
        token.appendHex(to: &hex)
        let receipt = current.ridRaw.map { cluster.newReceipt(session, rid: Array($0), awaitedNode: token.node) } ?? 0
        cluster.enqueue(ClusterState.Event(channel: [], from: session.id, data: data.map { Array($0) }, receipt: receipt,
                                           replyToken: hex, keepsHistory: false, directNode: token.node))
    }

    /// A reply sent on another node to a request of this node. - Returns: whether it was
    /// the first (the request was still waiting).
    public func remoteReply(token hex: [UInt8], from replier: ConnectionID, data: [UInt8]?) -> Bool {
        guard let token = hex.withUnsafeBytes({ ReplyToken(hex: $0) }) else { return false }
        guard let data else { return answerRequest(token, replier: replier, data: nil) }
        return data.withUnsafeBytes { answerRequest(token, replier: replier, data: $0) }
    }

    /// The requester's node said whether a reply sent from here was the first: answers the
    /// replier's `rid`.
    public func remoteReplyAnswered(receipt: Int, delivered: Bool) {
        guard let waiting = cluster?.takeReceipt(receipt) else { return }
        // A half-closed publisher closes once its last receipt is written.
        defer { closeIfDrained(waiting.session) }
        let session = waiting.session
        guard sessions[session.id] === session, !session.closeAfterFlush else { return }
        write(session) { out in
            out.appendRaw(#"{"ok":"reply""#)
            appendStoredRid(waiting.rid, to: &out)
            out.appendRaw(delivered ? #","delivered":true}"# : #","delivered":false}"#)
            out.append(UInt8(ascii: "\n"))
        }
    }

    /// A node left or was declared down: a `reply` whose `rid` waits for that node's answer
    /// (was it the first?) is answered `delivered:false`, as if it had never arrived there.
    /// Costs the receipts waiting now.
    public func clusterNodeGone(_ node: Int) {
        guard let cluster else { return }
        let waiting = cluster.receipts.filter { $0.value.awaitedNode == node }.map(\.key)
        for receipt in waiting { remoteReplyAnswered(receipt: receipt, delivered: false) }
    }

    /// A reply could not be sent to the requester's node (Redis unreachable): its `rid` is
    /// answered `unavailable`.
    public func remoteReplyFailed(receipt: Int, reason: String) {
        failReceipt(receipt, op: "reply", reason: reason)
    }

    /// Redis sent a request of this node to `nodes` nodes: once that many report they
    /// delivered it to nobody (`clusterRequestUnheard`), it is `no_responders`.
    public func clusterRequestRouted(token hex: [UInt8], nodes: Int) {
        countRequestNodes(hex) { $0.routedNodes = nodes }
    }

    /// A node delivered a request of this node to nobody (every subscriber there locked, the
    /// requester's own with `echo:false`, a group member gone).
    public func clusterRequestUnheard(token hex: [UInt8]) {
        countRequestNodes(hex) { $0.unheardNodes += 1 }
    }

    private func countRequestNodes(_ hex: [UInt8], _ change: (inout PendingRequest) -> Void) {
        guard let token = hex.withUnsafeBytes({ ReplyToken(hex: $0) }), let id = requests.id(for: token) else { return }
        requests.update(id, change)
        guard let pending = requests.request(id), let routed = pending.routedNodes, pending.unheardNodes >= routed else { return }
        clusterRequestUnsent(token: hex, unavailable: nil)
    }

    /// A request of this node reached nobody (the routing table has no node for its
    /// channel, or every node it went to delivered it to nobody): `no_responders`, as on one
    /// node; or it could not be sent (`unavailable`, with `reason`).
    public func clusterRequestUnsent(token hex: [UInt8], unavailable reason: String?) {
        guard let token = hex.withUnsafeBytes({ ReplyToken(hex: $0) }), let id = requests.id(for: token),
              let pending = requests.take(id) else { return }
        deadlines.cancel(kind: .request, id: id)
        write(pending.requester) { out in
            if let reason {
                out.appendRaw(#"{"error":"unavailable","message":"#)
                out.appendJSONString(Array(("cluster: " + reason).utf8))
            } else {
                out.appendRaw(#"{"error":"no_responders","message":"#)
                out.appendJSONString(Array(#"no subscriber received the request on ""#.utf8) + pending.channel.name + [34])
            }
            out.appendRaw(#","op":"req""#)
            appendStoredRid(pending.rid, to: &out)
            out.appendRaw("}\n")
        }
        closeIfDrained(pending.requester)
    }

    /// A delivered request's deadline passed: who may reply to it is forgotten.
    func expireDeliveredRequest(_ id: Int) {
        cluster?.delivered.remove(id: id)
    }

    /// After SIGHUP: recipients whose user may no longer publish on a delivered request's
    /// channel may no longer reply to it.
    func revokeDeliveredRequestRights() {
        guard let cluster, cluster.delivered.count > 0 else { return }
        cluster.delivered.removeRecipients { channel, recipient in
            guard let session = sessions[recipient] else { return true }
            return !mayPublish(session, to: channel)
        }
    }

    /// Answers the request of this node with `token`, if it still waits, with a reply from
    /// `replier`. - Returns: whether it did.
    private func answerRequest(_ token: ReplyToken, replier: ConnectionID, data: UnsafeRawBufferPointer?) -> Bool {
        guard let id = requests.id(for: token), let pending = requests.take(id) else { return false }
        deadlines.cancel(kind: .request, id: id)
        write(pending.requester) { out in
            out.appendRaw(#"{"ok":"req""#)
            appendStoredRid(pending.rid, to: &out)
            out.appendRaw(#","from":"c"#)
            out.appendInt(replier)
            out.append(UInt8(ascii: "\""))
            if let data {
                out.appendRaw(#","data":"#)
                out.appendRaw(data)
            }
            out.appendRaw("}\n")
        }
        closeIfDrained(pending.requester)
        return true
    }

    /// `{"ok":"reply","rid":…,"delivered":BOOL}` when the `reply` had a `rid`.
    private func answerReply(_ session: Session, delivered: Bool) {
        guard current.ridRaw != nil else { return }
        answer(session, .reply) { out in
            out.appendRaw(delivered ? #","delivered":true"# : #","delivered":false"#)
        }
    }
}
