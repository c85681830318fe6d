import HeraldBroker

/// Idle channel records in Redis collected (issue 32, item 6; `ClusterCollectScripts`): a
/// step looks at the next `cluster.collect_keys` keys and deletes the channel records that
/// hold nothing and that no node's interest covers. Every node asks each period; the script
/// gives the step to one of them, each period while steps find records to collect, else once
/// per `collectRestPeriods`.
extension ClusterEngine {
    /// Channels one `forget` call deletes at most.
    static let forgetBatch = 500
    /// Periods without a step after one that found little to collect.
    static let collectRestPeriods = 10

    /// From the period timer: asks every serving shard for a step of its collection (on
    /// its command link, behind this node's writes there).
    func collectIdleChannels() {
        guard settings.collectKeys > 0, let sha = scripts["collect"] else { return }
        let periodMs = max(100, min(1_000, settings.nodeTimeoutMs / 3))
        let arguments = [Array("EVALSHA".utf8), sha, Array("0".utf8), Array(prefix.utf8), Array(String(periodMs).utf8),
                         Array(String(settings.collectKeys).utf8), Array(String(periodMs * Self.collectRestPeriods).utf8)]
        for (shard, link) in servingLinks {
            link.send(arguments) { [unowned self] reply in
                if let failure = reply.failure, failure.hasPrefix("NOSCRIPT") { return scriptsMissing(onShard: shard) }
                guard let found = reply.elements, found.first?.integer == 1 else { return }
                forgetIdle(found.dropFirst(), on: shard)
            }
        }
    }

    /// Of `found` (`CH SEQ` pairs), the channels no node's interest covers go to `forget`.
    private func forgetIdle(_ found: ArraySlice<RedisReply>, on shard: Int) {
        guard let sha = scripts["forget"], !found.isEmpty, let link = dataLink(shard) else { return }
        var batch: [[UInt8]] = []
        func send() {
            guard !batch.isEmpty else { return }
            link.send([Array("EVALSHA".utf8), sha, Array("0".utf8), Array(prefix.utf8)] + batch) { _ in }
            batch.removeAll(keepingCapacity: true)
        }
        var at = found.startIndex
        while at + 1 < found.endIndex {
            defer { at += 2 }
            guard let channel = found[at].bytes, let seq = found[at + 1].bytes,
                  table.nodes(for: channel, includingGroups: true).isEmpty else { continue }
            batch += [channel, seq]
            if batch.count >= 2 * Self.forgetBatch { send() }
        }
        send()
        link.flush()
    }
}
