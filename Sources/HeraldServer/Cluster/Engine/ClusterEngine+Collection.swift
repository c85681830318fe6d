import HeraldBroker

/// Idle channel records in Redis collected (issue 32, item 6; `ClusterCollectScripts`): once
/// a period one node looks at the next `collectKeysPerPeriod` keys, and deletes the channel
/// records that hold nothing and that no node's interest covers.
extension ClusterEngine {
    /// Keys one `collect` step looks at (about 5 ms of Redis's time for 5,000).
    static let collectKeysPerPeriod = 5_000
    /// Channels one `forget` call deletes at most.
    static let forgetBatch = 500

    /// Runs one step of the collection (on the command link, behind this node's writes).
    func collectIdleChannels() {
        guard let sha = scripts["collect"] else { return }
        let periodMs = max(100, min(1_000, settings.nodeTimeoutMs / 3))
        let arguments = [Array("EVALSHA".utf8), sha, Array("0".utf8), Array(prefix.utf8), Array(String(periodMs).utf8),
                         Array(String(Self.collectKeysPerPeriod).utf8)]
        commands.send(arguments) { [unowned self] reply in
            if let failure = reply.failure, failure.hasPrefix("NOSCRIPT") { return loadScripts() }
            forgetIdle(reply.elements ?? [])
        }
    }

    /// Of `found` (`CH SEQ` pairs), the channels no node's interest covers go to `forget`.
    private func forgetIdle(_ found: [RedisReply]) {
        guard let sha = scripts["forget"] else { return }
        var batch: [[UInt8]] = []
        func send() {
            guard !batch.isEmpty else { return }
            commands.send([Array("EVALSHA".utf8), sha, Array("0".utf8), Array(prefix.utf8)] + batch) { _ in }
            batch.removeAll(keepingCapacity: true)
        }
        var at = 0
        while at + 1 < found.count {
            defer { at += 2 }
            guard let channel = found[at].bytes, let seq = found[at + 1].bytes,
                  table.nodes(for: channel, includingGroups: true).isEmpty else { continue }
            batch += [channel, seq]
            if batch.count >= 2 * Self.forgetBatch { send() }
        }
        send()
        commands.flush()
    }
}
