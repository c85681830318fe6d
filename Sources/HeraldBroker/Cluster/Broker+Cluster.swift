import HeraldWire

/// Cluster mode inside the broker (docs/cluster.md): a `pub` is checked here as on one node
/// and queued for the engine; events from Redis fan out here with the cluster's `seq`; a
/// pattern's first local subscriber makes an interest change whose `sub` answer waits until
/// every node has seen it. Nothing here runs when `cluster` is nil.
extension Broker {
    /// Cluster mode's `pub`: the same checks, then the event joins the engine's batch.
    /// The receipt (with `rid`) comes when Redis gave the event its `seq`.
    /// - Parameter dedupID: a `pub`'s `id` (idempotent publish): the shard's script delivers
    ///   the event only if its channel did not see that id within `dedup_window_ms`.
    func publishToCluster(_ cluster: ClusterState, from session: Session, dedupID: [UInt8]? = nil) throws(HeraldError) {
        let channel = try publishChannel(for: session)
        let data = scanner.raw(.data).map { Array($0) }
        let receipt = current.ridRaw.map { cluster.newReceipt(session, rid: Array($0)) } ?? 0
        var event = ClusterState.Event(channel: channel.name, from: session.id, data: data, receipt: receipt)
        if session.hasUser { event.user = session.user?.name }
        event.dedupID = dedupID
        cluster.enqueue(event)
    }

    /// Redis gave a receipted event its `seq`: answers the publisher. In cluster mode
    /// `receivers` counts the nodes the event went to (docs/cluster.md, "receipts").
    /// - Parameter duplicate: the event was not delivered: its channel saw its `id` within
    ///   the window, and `seq`/`nodes` are the first publish's.
    public func clusterPublished(receipt: Int, seq: Int, nodes: Int, duplicate: Bool = false) {
        answerReceipt(receipt) { waiting, out in
            out.appendRaw(#"{"ok":"pub","rid":"#)
            out.append(contentsOf: waiting.rid)
            out.appendRaw(#","seq":"#)
            out.appendInt(seq)
            out.appendRaw(#","receivers":"#)
            out.appendInt(nodes)
            if duplicate { out.appendRaw(#","duplicate":true"#) }
            out.appendRaw("}\n")
        }
    }

    /// A batch could not be published (Redis unreachable): each receipted publisher gets
    /// `unavailable`; events without a receipt are lost, as a `pub` without `rid` may be.
    public func clusterPublishFailed(receipt: Int, reason: String) {
        failReceipt(receipt, op: "pub", reason: reason)
    }

    /// Writes the answer to a waiting receipt with `body`, if its publisher is still open;
    /// a half-closed publisher closes once its last receipt is written.
    private func answerReceipt(_ receipt: Int, _ body: (ClusterState.Receipt, inout [UInt8]) -> Void) {
        guard let waiting = cluster?.takeReceipt(receipt) else { return }
        defer { closeIfDrained(waiting.session) }
        let session = waiting.session
        guard sessions[session.id] === session, !session.closeAfterFlush else { return }
        write(session) { out in body(waiting, &out) }
    }

    /// Answers a waiting receipt `{"error":"unavailable","message":"cluster: REASON","op":OP,
    /// "rid":…}`: the one writer for every receipt Redis could not serve.
    func failReceipt(_ receipt: Int, op: StaticString, reason: String) {
        answerReceipt(receipt) { waiting, out in
            out.appendRaw(#"{"error":"unavailable","message":"#)
            out.appendJSONString(Array(("cluster: " + reason).utf8))
            out.appendRaw(#","op":""#)
            out.appendRaw(op)
            out.appendRaw("\"")
            appendStoredRid(waiting.rid, to: &out)
            out.appendRaw("}\n")
        }
    }

    /// An event from Redis (published on this node or another): fans out to this node's
    /// subscribers outside queue groups with the cluster's `seq` (`deliverRemote(…routing:…)`
    /// says which groups and whether it is a request).
    /// - Returns: how many subscriptions here received it.
    @discardableResult
    public func deliverRemote(channel name: [UInt8], seq: Int, from publisher: ConnectionID,
                              data: UnsafeRawBufferPointer?) -> Int {
        name.withUnsafeBytes { deliverRemote(channelBytes: $0, seq: seq, from: publisher, data: data) }
    }

    /// The receive path of a cross-node `pub` event, with the channel and data read in place
    /// from the node message: no copy unless a catch-up buffers it, and the channel record
    /// and the quoted publisher id of the previous event are reused when they repeat.
    /// - Returns: how many subscriptions here received it.
    @discardableResult
    public func deliverRemote(channelBytes name: UnsafeRawBufferPointer, seq: Int, from publisher: ConnectionID,
                              data: UnsafeRawBufferPointer?) -> Int {
        if let cluster, !cluster.catchingUp.isEmpty || !cluster.floors.isEmpty || cluster.isResuming {
            return deliverRemote(RemoteEvent(seq: seq, from: publisher, channel: Array(name), data: data.map { Array($0) }))
        }
        let channel: Channel
        if let last = remoteChannel, !last.isRetired, last.name.elementsEqual(name) {
            channel = last
        } else {
            let key = Array(name)
            if let known = channels[key] {
                channel = known
            } else {
                guard index.matchCount(for: key) > 0 else { return 0 }
                channel = self.channel(named: key)
            }
            remoteChannel = channel
        }
        channel.seq = max(channel.seq, seq)
        channel.clusterSerial = nextSerial
        buildSharedParts(seq: seq, quotedFrom: quotedRemote(publisher), data: data)
        stats.msgsIn += 1
        // Plain: this node's queue groups get an event only when the script picked them.
        let receivers = fanOut(on: channel, publisherID: publisher, plain: true, pickedGroups: [])
        flushSystemEvents()
        return receivers
    }

    /// `"cN"` for a publisher's global id, kept for the next event of the same publisher.
    private func quotedRemote(_ publisher: ConnectionID) -> [UInt8] {
        if let cached = remoteQuoted, cached.id == publisher { return cached.quoted }
        var client: [UInt8] = [UInt8(ascii: "c")]
        client.appendInt(publisher)
        var quoted: [UInt8] = []
        quoted.appendJSONString(client)
        remoteQuoted = (publisher, quoted)
        return quoted
    }

    /// An event from Redis, `pub` or state change, routed as a plain event (to this node's
    /// subscriptions outside queue groups; `deliverRemote(_:routing:now:)` takes the groups
    /// and a request's token).
    /// - Returns: how many subscriptions here received it.
    @discardableResult
    public func deliverRemote(_ event: RemoteEvent) -> Int {
        deliverRemote(event, routing: ClusterRouting(), now: lastNow)
    }

    /// After `index.insert` made `pattern` new here: in cluster mode, tells the other nodes
    /// and holds the session's output (the coming `ok` first) until all of them saw it.
    func clusterInterestAdded(_ pattern: [UInt8], for session: Session) {
        guard let cluster else { return }
        let ticket = cluster.added(pattern)
        if session.barriers.isEmpty { retention.heldSessions.append(session) }
        session.holdOutput(untilTicket: ticket)
    }

    /// After `index.remove` left `pattern` without subscribers here.
    func clusterInterestRemoved(_ pattern: [UInt8]) {
        cluster?.removed(pattern)
    }

    /// Whether `session` holds locks or instance channels: what a node cut off from Redis
    /// past its liveness deadline must not vouch for (docs/cluster.md, "Failover and
    /// fail-stop").
    public func holdsClusterOwnership(_ session: Session) -> Bool {
        locks.count(ownedBy: session.id) > 0 || instances.count(ownedBy: session.id) > 0
    }

    /// Every node acknowledged the interest changes up to `ticket`: releases the answers
    /// held for them.
    public func interestSeen(upTo ticket: Int) {
        guard let cluster else { return }
        cluster.markDone(upTo: ticket)
        releaseHeldSessions()
    }

    /// Every pattern this node has a subscriber on outside queue groups, for re-registering
    /// its interest after the cluster's Redis came back (its sets may be gone; groups are
    /// `localGroupMemberships`).
    public func localInterestPatterns() -> [[UInt8]] {
        index.allPatterns().filter { index.plainCount(withPattern: $0) > 0 }
    }
}
