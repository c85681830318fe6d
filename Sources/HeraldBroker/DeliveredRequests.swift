/// Cluster mode with auth on: the requests (from any node) delivered on this node, by reply
/// token, with the connections they were delivered to and their channel (docs/cluster.md,
/// "Requests and replies").
///
/// Why here and not on the requester's node: the reply-rights rule of issue 12 (only a
/// connection the request was delivered to, whose user may publish on the request's channel,
/// may reply) needs the recipients, and they are known only where the request fanned out.
/// So the delivering node checks a `reply` before sending it on; the requester's node takes
/// the first one. An entry lives until the request's timeout plus a margin (a deadline of
/// kind `deliveredRequest`), so a late reply is still checked, then ignored by the requester.
struct DeliveredRequests {
    /// One delivered request.
    struct Entry {
        /// The connections (on this node) it was delivered to.
        var recipients: Set<ConnectionID>
        /// Its channel: a replier's user must be allowed to publish there.
        let channel: [UInt8]
        /// The id its deadline is scheduled under.
        let id: Int
    }

    private var byToken: [ReplyToken: Entry] = [:]
    private var tokens: [Int: ReplyToken] = [:]
    private var nextID = 0

    /// How many delivered requests are remembered.
    var count: Int { byToken.count }

    /// Remembers a delivery (a token delivered again here adds its recipients).
    /// - Returns: the entry's id, and whether it is new (then its deadline must be scheduled).
    mutating func add(_ token: ReplyToken, recipients: Set<ConnectionID>, channel: [UInt8]) -> (id: Int, isNew: Bool) {
        if let known = byToken[token] {
            byToken[token]?.recipients.formUnion(recipients)
            return (known.id, false)
        }
        nextID += 1
        byToken[token] = Entry(recipients: recipients, channel: channel, id: nextID)
        tokens[nextID] = token
        return (nextID, true)
    }

    /// The delivery of the request with this token, if remembered.
    func entry(for token: ReplyToken) -> Entry? {
        byToken[token]
    }

    /// Forgets the entry with this id (its deadline passed).
    mutating func remove(id: Int) {
        guard let token = tokens.removeValue(forKey: id) else { return }
        byToken[token] = nil
        if byToken.isEmpty && byToken.capacity > 4096 {
            byToken = [:]
            tokens = [:]
        }
    }

    /// Takes out of each entry's recipients those `isRevoked` names (after SIGHUP), so their
    /// `reply` is refused from now on.
    mutating func removeRecipients(where isRevoked: (_ channel: [UInt8], _ recipient: ConnectionID) -> Bool) {
        for (token, entry) in byToken {
            let revoked = entry.recipients.filter { isRevoked(entry.channel, $0) }
            if !revoked.isEmpty { byToken[token]?.recipients.subtract(revoked) }
        }
    }
}
