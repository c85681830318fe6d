import HeraldBroker

/// `cluster.wait_replicas`: a retained-state write is answered only once `WAIT N timeout`,
/// sent after it on the same command connection, says N replicas have it (docs/cluster.md,
/// "Redis failover"). The calls of one loop pass share one `WAIT` (`ReplicaWait`).
extension ClusterEngine {
    /// The open `ReplicaWait` a call joins, or nil when the call needs none: a read, a
    /// script other than `state`, or `wait_replicas` 0.
    func replicaWait(for call: ClusterState.ScriptCall) -> ReplicaWait? {
        guard settings.waitReplicas > 0, call.script == .state, call.channel != nil else { return nil }
        if let open = openReplicaWait { return open }
        let made = ReplicaWait()
        openReplicaWait = made
        return made
    }

    /// Sends `WAIT` for the writes sent since the last one, and answers them when it returns.
    func waitForReplicas() {
        guard let wait = openReplicaWait, !wait.isEmpty else { return }
        openReplicaWait = nil
        let needed = settings.waitReplicas
        let timeoutMs = settings.waitTimeoutMs
        let arguments = ["WAIT", String(needed), String(timeoutMs)].map { Array($0.utf8) }
        let sent = commands.send(arguments) { [unowned self] reply in
            for (call, outcome) in wait.outcomes(confirmed: reply.integer, needed: needed, timeoutMs: timeoutMs) {
                answered(call, outcome)
            }
        }
        guard !sent else { return }
        for (call, outcome) in wait.outcomes(confirmed: nil, needed: needed, timeoutMs: timeoutMs) { answered(call, outcome) }
    }
}
