import HeraldBroker

/// Instance channels across nodes, the engine's side (docs/cluster.md, "Instance
/// channels"): removals announced on the interest channel end the exact subscriptions here;
/// a removal that could not reach Redis ends them here at once and is sent again when Redis
/// is back; the dead nodes' channels are cleared a slice per period; after Redis came back
/// this node claims its owners' channels again.
extension ClusterEngine {
    /// Channels one `reapInstances` call clears.
    static let reapInstancesSlice = 1_000

    /// `ROWNER REASON CH CH…`: the channels were removed in Redis.
    func removalMessage(_ payload: [UInt8]) {
        let fields = payload.dropFirst().split(separator: 32, omittingEmptySubsequences: true)
        guard fields.count >= 3 else {
            server.logger.warn("cluster: malformed removal message dropped", ["bytes": payload.count])
            return
        }
        let names = fields.dropFirst(2).map { Array($0) }
        server.shared.withLock { broker in broker.clusterChannelsRemoved(names) }
    }

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

    /// Makes Redis's record of this node's instance channels exactly what it holds (a
    /// removal lost with a primary that died is cleared, `ClusterInstanceScripts.resync`),
    /// then claims every one again (Redis restarted without its data, or this node was
    /// declared down while it ran): one `declare` call per owner, at most
    /// `ClusterState.undeclareBatch` channels each.
    func claimInstancesAgain() {
        let claims = server.shared.withLock { broker in broker.localInstanceClaims() }
        var resync = [Array("EVALSHA".utf8), scripts["instanceResync"] ?? [], Array("0".utf8), Array(prefix.utf8),
                      Array(String(nodeIndex).utf8)]
        for (owner, names) in claims {
            for name in names { resync += [name, Array(String(owner).utf8)] }
        }
        commands.send(resync) { _ in }
        for (owner, names) in claims {
            var start = 0
            while start < names.count {
                let end = min(start + ClusterState.undeclareBatch, names.count)
                let arguments = [Array(String(nodeIndex).utf8), Array(String(owner).utf8)] + names[start..<end]
                sendCall(ClusterState.ScriptCall(unwaited: .declare, arguments: arguments))
                start = end
            }
        }
    }
}
