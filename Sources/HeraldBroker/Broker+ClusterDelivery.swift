import HeraldWire

/// Delivering an event that came from Redis (docs/cluster.md): plain subscribers, the queue
/// groups the publish script picked this node for, and, for a `req`, the reply token, with
/// the recipients remembered when auth is on (`DeliveredRequests`).
extension Broker {
    /// How much longer than a request's `timeout_ms` a delivering node remembers who may
    /// reply: the requester's clock and this node's are not the same, and a reply checked
    /// here after the requester timed out is only ignored there.
    static let deliveredRequestMarginMs = 1_000

    /// An event from Redis, routed as `routing` says.
    /// - Parameters:
    ///   - now: the monotonic clock in ms (a request's recipients are kept until its timeout).
    /// - Returns: how many subscriptions here received it.
    @discardableResult
    public func deliverRemote(channel name: [UInt8], seq: Int, from publisher: ConnectionID,
                              data: UnsafeRawBufferPointer?, routing: ClusterRouting, now: Int) -> Int {
        defer { flushSystemEvents() }
        guard index.matchCount(for: name) > 0 else { return 0 }
        var token: ReplyToken?
        var middle: [UInt8] = []
        if let hex = routing.replyToken {
            token = hex.withUnsafeBytes { ReplyToken(hex: $0) }
            guard token != nil else { return 0 }
            middle.appendRaw(#","reply":""#)
            middle.append(contentsOf: hex)
            middle.append(UInt8(ascii: "\""))
        }
        let channel = channel(named: name)
        channel.seq = max(channel.seq, seq)
        var quoted: [UInt8] = []
        var client: [UInt8] = [UInt8(ascii: "c")]
        client.appendInt(publisher)
        quoted.appendJSONString(client)
        buildSharedParts(seq: seq, quotedFrom: quoted, data: data, middle: middle)
        stats.msgsIn += 1
        let guarded = token != nil && config.auth.isEnabled
        if guarded { requests.beginCollectingRecipients() }
        let receivers = fanOutCluster(on: channel, publisherID: publisher, plain: routing.plain, groups: routing.groups)
        guard guarded, let token, let cluster else { return receivers }
        let recipients = requests.endCollectingRecipients()
        if !recipients.isEmpty {
            let (id, isNew, evicted) = cluster.delivered.add(token, recipients: recipients, channel: name)
            let timeout = max(1, min(routing.requestTimeoutMs, Broker.maxRequestTimeoutMs))
            if isNew { deadlines.schedule(at: now + timeout + Broker.deliveredRequestMarginMs, kind: .deliveredRequest, id: id) }
            if let evicted { deadlines.cancel(kind: .deliveredRequest, id: evicted) }
        }
        return receivers
    }
}
