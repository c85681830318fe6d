import HeraldBroker

/// `cluster.wait_replicas`: a retained-state write is answered only once `WAIT N timeout`,
/// sent after it on the same command connection (the shard's), says N replicas have it (docs/cluster.md,
/// "Redis failover"). The calls of one loop pass share one `WAIT` (`ReplicaWait`).
extension ClusterEngine {
    /// The open `ReplicaWait` a call joins, or nil when the call needs none: a read, a
    /// script other than `state`, or `wait_replicas` 0.
    func replicaWait(for call: ClusterState.ScriptCall, shard: Int) -> ReplicaWait? {
        guard settings.waitReplicas > 0, call.script == .state, call.channel != nil else { return nil }
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
            for (call, outcome) in wait.outcomes(confirmed: reply.integer, needed: needed, timeoutMs: timeoutMs) {
                answered(call, outcome)
            }
        } ?? false
        guard !sent else { return }
        for (call, outcome) in wait.outcomes(confirmed: nil, needed: needed, timeoutMs: timeoutMs) { answered(call, outcome) }
    }
}
