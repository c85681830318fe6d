import CLibUV
import HeraldBroker

/// Node liveness (docs/cluster.md, "Node liveness and the reaper"): every node runs the
/// reaper each period; the one whose call finds a dead node first publishes
/// `$sys.node.down`, and every node forgets the dead node's routing entries when the
/// script's `dNODE V` announcement arrives.
extension ClusterEngine {
    /// Runs the reaper and publishes `$sys.node.down` for each node it declared down.
    ///
    /// On the control link, beside the liveness refresh: whether another node is dead is
    /// Redis's answer about that node's key, unrelated to this node's data in flight, and
    /// behind a flood's backlog on `commands` a dead node's slots and interest would outlive
    /// it by as long as the backlog (the script is loaded on `commands`; SHAs are Redis-wide).
    func reap() {
        let arguments = [Array("EVALSHA".utf8), scripts["reap"] ?? [], Array("0".utf8), Array(prefix.utf8),
                         Array(String(nodeIndex).utf8), Array(String(freshLivenessMs).utf8)]
        livenessLink.send(arguments) { [unowned self] reply in
            guard let halves = reply.elements, halves.count == 2, let parts = halves[0].elements else {
                if let failure = reply.failure, failure.hasPrefix("NOSCRIPT") { loadScripts() }
                return
            }
            staleNodes = Set((halves[1].elements ?? []).compactMap { $0.bytes.flatMap { Int(String(decoding: $0, as: UTF8.self)) } })
            if !staleNodes.isEmpty { releaseBarriers(now: uv_hrtime()) }
            var at = 0
            while at + 2 < parts.count {
                let index = parts[at].bytes.flatMap { Int(String(decoding: $0, as: UTF8.self)) } ?? 0
                let name = parts[at + 1].bytes.map { String(decoding: $0, as: UTF8.self) } ?? ""
                let reason = parts[at + 2].bytes.map { String(decoding: $0, as: UTF8.self) } ?? "timeout"
                server.logger.warn("cluster node declared down", ["node": name, "index": index, "reason": reason])
                server.shared.withLock { broker in broker.publishClusterNodeEvent(up: false, index: index, name: name, reason: reason) }
                at += 3
            }
        }
    }

    /// The least liveness left (ms) of a node refreshed within the last two periods: its key
    /// was set with the node timeout as TTL at most one period and a round trip ago.
    var freshLivenessMs: Int {
        settings.nodeTimeoutMs - 2 * min(1_000, settings.nodeTimeoutMs / 3)
    }

    /// Registers this node again after Redis came back (`ClusterNodeScripts.rejoin`), unless
    /// the reaper declared it down meanwhile: then it starts a new incarnation. Until Redis
    /// answers, what the node would send is held (`IncarnationState`).
    /// - Parameter alive: called with true once registered again under the same index.
    func rejoin(_ alive: @escaping () -> Void) {
        let sentAt = uv_hrtime()
        let index = nodeIndex
        let arguments = [Array("EVALSHA".utf8), scripts["rejoin"] ?? [], Array("0".utf8), Array(prefix.utf8),
                         Array(String(nodeIndex).utf8), Array(settings.node.utf8), Array(String(settings.nodeTimeoutMs).utf8)]
        let sent = commands.send(arguments) { [unowned self] reply in
            guard index == nodeIndex, !incarnation.isResetting else { return }
            if reply.integer == 1 { return startNewIncarnation("the reaper declared it down while it could not reach Redis") }
            guard reply.integer == 0 else { return }
            incarnation.registered(sentAt: sentAt, answeredAt: uv_hrtime())
            publishLiveness()
            alive()
        }
        // Not sent: the link went, and the next readiness asks again.
        _ = sent
    }

    /// The announcement `dNODE` named this node and Redis confirmed it (declared down while
    /// it could still hear: its refreshes were late): a new incarnation.
    func reapedWhileAlive() {
        startNewIncarnation("another node's reaper declared it down")
    }

    /// A `dNODE` (declared down) or `lNODE` (left) message: acted on only once Redis confirms
    /// it (the node's liveness key is gone, or the reaper put it in `{p}dead`), since anyone
    /// who may publish on the interest channel can send one (issue 32: forged `d` messages
    /// made a node register again 413 times and the others drop its routes). One check per
    /// node at a time: repeats while it is in flight are dropped, so a flood costs one
    /// `EVAL` per round trip, not one reaction per message.
    func confirmGone(_ node: Int) {
        guard goneChecks.insert(node).inserted else { return }
        let keys = [Array((prefix + "alive:" + String(node)).utf8), Array((prefix + "dead").utf8)]
        let sent = commands.send([Array("EVAL".utf8), Array(Self.goneCheckScript.utf8), Array("2".utf8)] + keys
                                 + [Array(String(node).utf8)]) { [unowned self] reply in
            goneChecks.remove(node)
            guard reply.integer == 1 else {
                if reply.failure == nil {
                    server.logger.warn("cluster: a node-down message Redis does not confirm was ignored", ["index": node])
                }
                return
            }
            if node == nodeIndex { return reapedWhileAlive() }
            nodeGone(node)
        }
        if !sent { goneChecks.remove(node) }
    }

    /// 1 when node `ARGV[1]` is gone: its liveness key (`KEYS[1]`) absent, or it is in the
    /// reaper's `{p}dead` (`KEYS[2]`).
    static let goneCheckScript = """
    if redis.call('EXISTS', KEYS[1]) == 0 or redis.call('SISMEMBER', KEYS[2], ARGV[1]) == 1 then return 1 end
    return 0
    """

    /// Publishes `$sys.node.up` for this node.
    func announceUp() {
        server.shared.withLock { broker in broker.publishClusterNodeEvent(up: true, index: nodeIndex, name: settings.node) }
    }
}

extension ClusterEngine {
    /// After Redis came back (a failover, a restart, a partition healed), before this node
    /// publishes anything: raises every channel's counter to the last `seq` this node
    /// delivered on it (`ClusterStateScripts.resume`, in calls of 1,000 channels), and reads
    /// back from history the events of the channels whose counter had gone past it
    /// (`Broker+ClusterResume`); their live events are held until then.
    ///
    /// With `include`, only the channels it accepts (one shard came back); each channel's
    /// call goes to its shard.
    func resumeSeqs(points: [(channel: [UInt8], seq: Int, wanted: Bool)]? = nil,
                    where include: @escaping ([UInt8]) -> Bool = { _ in true }) {
        let delivered = points ?? server.shared.withLock { broker in broker.beginResume(where: include) }
        var byShard: [[(channel: [UInt8], seq: Int, wanted: Bool)]] = Array(repeating: [], count: shardMap.count)
        for point in delivered { byShard[shard(of: point.channel)].append(point) }
        for (shard, points) in byShard.enumerated() {
            var start = 0
            while start < points.count {
                let batch = Array(points[start..<min(start + ClusterState.undeclareBatch, points.count)])
                var arguments = [Array("EVALSHA".utf8), scripts["resume"] ?? [], Array("0".utf8), Array(prefix.utf8)]
                for (channel, seq, _) in batch { arguments += [channel, Array(String(seq).utf8)] }
                let sent = dataLink(shard)?.send(arguments) { [unowned self] reply in resumed(batch, missed: reply) } ?? false
                if !sent { resumed(batch, missed: .disconnected) }
                start += batch.count
            }
        }
    }

    /// The `resume` script answered: channels with nothing missed end their resume at once;
    /// the others read their history after the `seq` this node delivered.
    private func resumed(_ batch: [(channel: [UInt8], seq: Int, wanted: Bool)], missed reply: RedisReply) {
        let missed = Set((reply.elements ?? []).compactMap(\.bytes))
        server.shared.withLock { broker in
            for (channel, _, wanted) in batch where wanted && !missed.contains(channel) { broker.endResume(channel, history: nil) }
        }
        let limit = Array(String(min(max(server.config.history, 1), 10_000)).utf8)
        let bytes = Array(String(server.config.maxPending / 2).utf8)
        for (channel, seq, wanted) in batch where wanted && missed.contains(channel) {
            let arguments = [Array("EVALSHA".utf8), scripts["catchUp"] ?? [], Array("0".utf8), Array(prefix.utf8),
                             [], channel, Array("0".utf8), Array("0".utf8), Array(String(seq).utf8), limit, bytes]
            let sent = dataLink(shard(of: channel))?.send(arguments) { [unowned self] reply in
                let history = Self.catchUpValue(reply)
                server.shared.withLock { broker in broker.endResume(channel, history: history) }
            } ?? false
            if !sent { server.shared.withLock { broker in broker.endResume(channel, history: nil) } }
        }
    }
}
