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
                         Array(String(nodeIndex).utf8)]
        livenessLink.send(arguments) { [unowned self] reply in
            guard let parts = reply.elements else {
                if let failure = reply.failure, failure.hasPrefix("NOSCRIPT") { loadScripts() }
                return
            }
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

    /// Registers this node again (after Redis came back); when it had been declared down
    /// meanwhile, it says so and announces itself up again.
    func rejoin() {
        let arguments = [Array("EVALSHA".utf8), scripts["rejoin"] ?? [], Array("0".utf8), Array(prefix.utf8),
                         Array(String(nodeIndex).utf8), Array(settings.node.utf8), Array(String(settings.nodeTimeoutMs).utf8)]
        commands.send(arguments) { [unowned self] reply in
            guard reply.integer == 1 else { return }
            server.logger.warn("cluster: this node had been declared down during the outage; it is registered again",
                               ["node": settings.node, "index": nodeIndex])
            announceUp()
        }
    }

    /// The announcement `dNODE` named this node (declared down while it could still hear:
    /// its refreshes were late). It registers itself and its interest again.
    func reapedWhileAlive() {
        server.logger.warn("cluster: this node was declared down while running; registering again",
                           ["node": settings.node, "index": nodeIndex])
        registerAgain()
    }

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
    func resumeSeqs() {
        let delivered = server.shared.withLock { broker in broker.beginResume() }
        var start = 0
        while start < delivered.count {
            let batch = Array(delivered[start..<min(start + ClusterState.undeclareBatch, delivered.count)])
            var arguments = [Array("EVALSHA".utf8), scripts["resume"] ?? [], Array("0".utf8), Array(prefix.utf8)]
            for (channel, seq, _) in batch { arguments += [channel, Array(String(seq).utf8)] }
            let sent = commands.send(arguments) { [unowned self] reply in resumed(batch, missed: reply) }
            if !sent { resumed(batch, missed: .disconnected) }
            start += batch.count
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
            let sent = commands.send(arguments) { [unowned self] reply in
                let history = Self.catchUpValue(reply)
                server.shared.withLock { broker in broker.endResume(channel, history: history) }
            }
            if !sent { server.shared.withLock { broker in broker.endResume(channel, history: nil) } }
        }
    }
}
