import HeraldBroker

/// `cluster.wait_replicas`: a retained-state write, and a `pub` with `rid`, is answered only
/// once `WAIT N timeout`, sent after it on the same command connection (the shard's), says N
/// replicas have it (docs/cluster.md, "Redis failover"). The writes of one loop pass share
/// one `WAIT` (`ReplicaWait`).
extension ClusterEngine {
    /// The open `ReplicaWait` a call joins, or nil when the call needs none: a read, a
    /// script other than `state`, or `wait_replicas` 0.
    func replicaWait(for call: ClusterState.ScriptCall, shard: Int) -> ReplicaWait? {
        guard settings.waitReplicas > 0, call.script == .state, call.channel != nil else { return nil }
        return openReplicaWait(shard: shard)
    }

    /// The open `ReplicaWait` a publish batch joins, or nil when it needs none: no event in
    /// it is an acknowledged `pub` (a `rid`, answered here; not a request, an offer or a
    /// reply routed to one node), or `wait_replicas` 0.
    ///
    /// Why: an acknowledged `pub` whose `seq` only the old primary had was lost in a
    /// failover, and the new primary gave that `seq` again (docs/cluster.md, "Known gap").
    func replicaWait(forPublishing events: [ClusterState.Event], shard: Int) -> ReplicaWait? {
        guard settings.waitReplicas > 0,
              events.contains(where: { $0.receipt != 0 && $0.offer == nil && $0.directNode == nil && $0.replyToken == nil })
        else { return nil }
        return openReplicaWait(shard: shard)
    }

    private func openReplicaWait(shard: Int) -> ReplicaWait {
        if let open = openReplicaWaits[shard] { return open }
        let made = ReplicaWait()
        openReplicaWaits[shard] = made
        return made
    }

    /// Sends `WAIT` on each shard for the writes sent there since its last one, and answers
    /// them when it returns.
    func waitForReplicas() {
        guard !openReplicaWaits.isEmpty else { return }
        let waits = openReplicaWaits
        openReplicaWaits = [:]
        for (shard, wait) in waits where !wait.isEmpty { waitForReplicas(wait, on: shard) }
    }

    private func waitForReplicas(_ wait: ReplicaWait, on shard: Int) {
        let needed = settings.waitReplicas
        let timeoutMs = settings.waitTimeoutMs
        let arguments = ["WAIT", String(needed), String(timeoutMs)].map { Array($0.utf8) }
        let sent = dataLink(shard)?.send(arguments) { [unowned self] reply in
            wait.settle(confirmed: reply.integer, needed: needed, timeoutMs: timeoutMs) { answered($0, $1) }
        } ?? false
        guard !sent else { return }
        wait.settle(confirmed: nil, needed: needed, timeoutMs: timeoutMs) { answered($0, $1) }
    }
}
