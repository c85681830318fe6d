import HeraldBroker

/// Locks across nodes, the engine's side (docs/cluster.md, "Locks"): lock changes of other
/// nodes arrive on the interest channel and are applied to the broker's lock table, then
/// acknowledged (a locker's answer waits for every node's acknowledgement); at (re)connect
/// the node reads every live node's locks at one version and replays over them the changes
/// it heard meanwhile.
extension ClusterEngine {
    /// A lock change heard on the interest channel. This node's own are applied already;
    /// before the snapshot, changes wait to be replayed over it.
    func lockMessage(_ payload: [UInt8]) {
        let parsed = ClusterLockMessage(payload)
        guard let message = admit(parsed, "lock", bytes: payload.count, hold: { heldLockMessages.append($0) }) else { return }
        apply(message)
        acknowledge(message.version)
    }

    /// A change heard on the interest channel, to apply now: nil when it is malformed
    /// (logged and dropped) or when the node is not ready yet (`hold` keeps it, to be
    /// replayed over the snapshot).
    func admit<Message>(_ message: Message?, _ what: String, bytes: Int, hold: (Message) -> Void) -> Message? {
        guard let message else {
            server.logger.warn("cluster: malformed " + what + " message dropped", ["bytes": bytes])
            return nil
        }
        guard isReady else {
            hold(message)
            return nil
        }
        return message
    }

    private func apply(_ message: ClusterLockMessage) {
        guard message.node != nodeIndex else { return }
        server.shared.withLock { broker in
            broker.applyClusterLocks(owner: message.owner, records: message.records, added: message.op == UInt8(ascii: "L"))
        }
    }

    /// Reads every live node's locks at one version, makes the other nodes' locks here
    /// exactly those, replays the changes heard since that version, then reads the links.
    func takeLockSnapshot() {
        readSnapshot("lockSnapshot", of: "lock") { [unowned self] version, parts in
            var snapshot: [(owner: ConnectionID, records: [[UInt8]])] = []
            for entry in parts.chunks(of: 2) {
                if let owner = entry[0].bytes.flatMap({ Int(String(decoding: $0, as: UTF8.self)) }) {
                    snapshot.append((owner, (entry[1].elements ?? []).compactMap(\.bytes)))
                }
            }
            server.shared.withLock { broker in broker.replaceClusterLocks(with: snapshot, ownNode: nodeIndex) }
            let heard = heldLockMessages
            heldLockMessages = []
            replay(heard.map { message in (message.version, { [unowned self] in apply(message) }) }, over: version)
            takeLinkSnapshot()
        }
    }

    /// Runs a snapshot script (`ClusterScripts.liveNodes` at its start) and hands `body` its
    /// version and the entries after it; a failed read starts getting ready over. The reply
    /// of a chain abandoned meanwhile (`snapshotRun` moved on) is ignored.
    func readSnapshot(_ script: String, of what: String, _ body: @escaping (Int, [RedisReply]) -> Void) {
        let arguments = [Array("EVALSHA".utf8), scripts[script] ?? [], Array("0".utf8), Array(prefix.utf8)]
        let run = snapshotRun
        commands.send(arguments) { [unowned self] reply in
            guard run == snapshotRun else { return }
            guard let parts = reply.elements, let version = parts.first?.integer else {
                return startOverLater("reading the " + what + " table failed", reply.failure ?? "bad reply")
            }
            body(version, Array(parts.dropFirst()))
        }
    }

    /// After a snapshot read at `version`: acknowledges it, applies the changes heard
    /// meanwhile that are newer, in order, and acknowledges the newest heard.
    func replay(_ heard: [(version: Int, apply: () -> Void)], over version: Int) {
        acknowledge(version)
        for change in heard where change.version > version { change.apply() }
        if let newest = heard.map(\.version).max() { acknowledge(newest) }
    }

    /// After Redis came back: makes Redis's record of this node's locks exactly what this
    /// node holds, in one `lockResync` call: a Redis restarted without its data lost them,
    /// and one that died with a change in flight (an `unlock`, a departure) kept records the
    /// node no longer has, which every node would otherwise mirror for good.
    func registerLocksAgain() {
        let owned = server.shared.withLock { broker in broker.localLockRecords(ownNode: nodeIndex) }
        var arguments = [Array("EVALSHA".utf8), scripts["lockResync"] ?? [], Array("0".utf8), Array(prefix.utf8),
                         Array(String(nodeIndex).utf8)]
        for (owner, records) in owned where !records.isEmpty {
            arguments.append(Array(String(owner).utf8))
            arguments.append(Array(String(records.count).utf8))
            arguments += records
        }
        commands.send(arguments) { _ in }
    }
}
