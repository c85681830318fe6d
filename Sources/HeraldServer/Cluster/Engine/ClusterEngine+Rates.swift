import HeraldBroker

/// Rate limits across the nodes (docs/cluster.md, "Rate limits across nodes"): the broker
/// queues a `rateShare` call once a second with its rate-limited users' connection counts;
/// the engine runs it on shard 0 and hands each user's cluster-wide total back, and the
/// broker runs the user's buckets at its share. No round trip per publish.
extension ClusterEngine {
    /// Runs a `rateShare` call (arguments: node, then `USER COUNT` pairs).
    func shareRates(_ call: ClusterState.ScriptCall) {
        guard call.arguments.count >= 3 else { return }
        let arguments = [Array("EVALSHA".utf8), scripts["rateShare"] ?? [], Array("0".utf8), Array(prefix.utf8), []]
            + call.arguments
        let pairs = stride(from: 1, to: call.arguments.count - 1, by: 2).map { index in
            (user: String(decoding: call.arguments[index], as: UTF8.self),
             local: Int(String(decoding: call.arguments[index + 1], as: UTF8.self)) ?? 0)
        }
        _ = commands.send(arguments) { [unowned self] reply in
            if case .error(let text) = reply, text.hasPrefix("NOSCRIPT") { scriptsMissing(onShard: 0) }
            guard let totals = reply.elements?.compactMap(\.integer), totals.count == pairs.count else { return }
            let now = server.main.now
            server.shared.withLock { broker in
                for (pair, total) in zip(pairs, totals) where pair.local > 0 {
                    broker.setRateShare(user: pair.user, local: pair.local, total: total, now: now)
                }
            }
        }
    }
}
