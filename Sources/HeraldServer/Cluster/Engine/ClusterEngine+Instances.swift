import HeraldBroker

/// Instance channels across nodes, the engine's side (docs/cluster.md, "Instance
/// channels"): a removal that could not reach Redis ends the exact subscriptions here at
/// once and is sent again when Redis is back; the dead nodes' channels are cleared a slice
/// per period. The removals announced and the claims after an outage are
/// `InstanceOwnerMirror`'s.
extension ClusterEngine {
    /// Channels one `reapInstances` call clears.
    static let reapInstancesSlice = 1_000

    /// An `undeclare` call failed (Redis unreachable): the exact subscriptions here end now,
    /// and the call is kept to be sent again once the cluster is ready (until then Redis
    /// still names the old owner, so the channel cannot be declared elsewhere).
    func undeclareFailed(_ call: ClusterState.ScriptCall) {
        server.shared.withLock { broker in broker.clusterChannelsRemoved(Array(call.arguments.dropFirst(3))) }
        undeclaresToRetry.append(call)
    }

    /// Sends the removals kept while Redis was away.
    func retryUndeclares() {
        let calls = undeclaresToRetry
        undeclaresToRetry = []
        for call in calls { sendCall(call) }
    }

    /// Clears a slice of the dead nodes' channels; again at once while some are left.
    func reapInstances() {
        let arguments = [Array("EVALSHA".utf8), scripts["reapInstances"] ?? [], Array("0".utf8), Array(prefix.utf8),
                         Array(String(Self.reapInstancesSlice).utf8)]
        commands.send(arguments) { [unowned self] reply in
            if reply.integer == 1 && isReady { reapInstances() }
        }
    }
}
