import HeraldWire

/// Delivering an event that came from Redis (docs/cluster.md): plain subscribers, the queue
/// groups the publish script picked this node for, and, for a `req`, the reply token, with
/// the recipients remembered when auth is on (`DeliveredRequests`).
extension Broker {
    /// How much longer than a request's `timeout_ms` a delivering node remembers who may
    /// reply: the requester's clock and this node's are not the same, and a reply checked
    /// here after the requester timed out is only ignored there.
    static let deliveredRequestMarginMs = 1_000

    /// An event from Redis, routed as `routing` says. A plain `pub` is also kept for the
    /// subscriptions whose catch-up is still being read. A state change is routed as a
    /// `pub`: the groups the state script picked this node for.
    /// - Parameters:
    ///   - now: the monotonic clock in ms (a request's recipients are kept until its timeout).
    /// - Returns: how many subscriptions here received it.
    @discardableResult
    public func deliverRemote(_ event: RemoteEvent, routing: ClusterRouting, now: Int) -> Int {
        defer { flushSystemEvents() }
        if let cluster, cluster.isResuming, holdForResume(event, routing: routing, cluster) { return 0 }
        if let cluster, !cluster.catchingUp.isEmpty, routing.plain, routing.replyToken == nil {
            bufferForCatchUps(event, cluster)
        }
        let held = cluster.map { $0.floors.isEmpty ? [] : holdBackCovered(event, $0) } ?? []
        defer { putBack(held) }
        guard index.matchCount(for: event.channel) > 0 else { return 0 }
        var token: ReplyToken?
        var replyField: [UInt8] = []
        if let hex = routing.replyToken {
            token = hex.withUnsafeBytes { ReplyToken(hex: $0) }
            guard token != nil else { return 0 }
            replyField.appendRaw(#","reply":""#)
            replyField.append(contentsOf: hex)
            replyField.append(UInt8(ascii: "\""))
        }
        let channel = channel(named: event.channel)
        channel.seq = max(channel.seq, event.seq)
        channel.clusterSerial = nextSerial
        var quoted: [UInt8] = []
        var client: [UInt8] = [UInt8(ascii: "c")]
        client.appendInt(event.from)
        quoted.appendJSONString(client)
        stats.msgsIn += 1
        if let middle = event.middle {
            buildSharedParts(seq: event.seq, quotedFrom: quoted, data: nil, middle: middle)
            // `data: nil` ended the frame with "}\n"; the state payload goes before it.
            eventShared.drop(last: 2)
            eventShared.append(event.tail)
            eventShared.append("}\n")
            return fanOut(on: channel, publisherID: event.from, plain: routing.plain, pickedGroups: routing.groups)
        }
        if let data = event.data {
            data.withUnsafeBytes { buildSharedParts(seq: event.seq, quotedFrom: quoted, data: $0, middle: replyField) }
        } else {
            buildSharedParts(seq: event.seq, quotedFrom: quoted, data: nil, middle: replyField)
        }
        let guarded = token != nil && config.auth.isEnabled
        if guarded { requests.beginCollectingRecipients() }
        let receivers = fanOut(on: channel, publisherID: event.from, plain: routing.plain, pickedGroups: routing.groups)
        guard guarded, let token, let cluster else { return receivers }
        let recipients = requests.endCollectingRecipients()
        if !recipients.isEmpty {
            let (id, isNew, evicted) = cluster.delivered.add(token, recipients: recipients, channel: event.channel)
            let timeout = max(1, min(routing.requestTimeoutMs, Broker.maxRequestTimeoutMs))
            if isNew { deadlines.schedule(at: now + timeout + Broker.deliveredRequestMarginMs, kind: .deliveredRequest, id: id) }
            if let evicted { deadlines.cancel(kind: .deliveredRequest, id: evicted) }
        }
        return receivers
    }
}
