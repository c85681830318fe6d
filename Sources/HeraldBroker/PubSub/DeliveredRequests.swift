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
///
/// Bounded: the requester's node forgets a request once it is answered, but this node does
/// not hear of that, so requests answered at once with a long `timeout_ms` would pile up
/// here. Past `capacity` entries the oldest goes first (a reply to it is then `forbidden`,
/// as for a token this node never delivered).
struct DeliveredRequests {
    /// The most entries kept (about 200 bytes each with their deadline).
    static let capacity = 100_000

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
    /// Ids in the order they came, for evicting the oldest; ids already removed are skipped
    /// (and compacted away when they outnumber the live ones).
    private var order: [Int] = []
    private var orderStart = 0

    /// How many delivered requests are remembered.
    var count: Int { byToken.count }

    /// Remembers a delivery (a token delivered again here adds its recipients).
    /// - Returns: the entry's id; whether it is new (then its deadline must be scheduled);
    ///   the id of the oldest entry it pushed out past `capacity` (its deadline must go).
    mutating func add(_ token: ReplyToken, recipients: Set<ConnectionID>,
                      channel: [UInt8]) -> (id: Int, isNew: Bool, evicted: Int?) {
        if let known = byToken[token] {
            byToken[token]?.recipients.formUnion(recipients)
            return (known.id, false, nil)
        }
        nextID += 1
        byToken[token] = Entry(recipients: recipients, channel: channel, id: nextID)
        tokens[nextID] = token
        order.append(nextID)
        var evicted: Int?
        if byToken.count > Self.capacity {
            while orderStart < order.count, evicted == nil {
                let oldest = order[orderStart]
                orderStart += 1
                if tokens[oldest] != nil {
                    remove(id: oldest)
                    evicted = oldest
                }
            }
        }
        compactOrder()
        return (nextID, true, evicted)
    }

    /// Drops the skipped and removed ids from `order` once they outnumber the live entries.
    private mutating func compactOrder() {
        guard order.count - orderStart > 2 * max(byToken.count, 1024) || orderStart > 4096 else { return }
        order = order[orderStart...].filter { tokens[$0] != nil }
        orderStart = 0
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
            order = []
            orderStart = 0
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
