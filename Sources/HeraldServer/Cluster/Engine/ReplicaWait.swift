import HeraldBroker

/// The retained-state writes one `WAIT` confirms (`cluster.wait_replicas`): the calls sent
/// on the command link since the previous `WAIT`, with their script replies as they come.
/// `WAIT` covers every earlier write of its connection, so one per loop pass is enough;
/// Redis answers in order, so every script reply is in before the `WAIT` reply.
final class ReplicaWait {
    /// The calls, in the order sent, and each one's reply once it came.
    private(set) var entries: [(call: ClusterState.ScriptCall, reply: RedisReply?)] = []

    /// Whether no call joined yet.
    var isEmpty: Bool { entries.isEmpty }

    /// Adds a call about to be sent. - Returns: its slot for `replied`.
    func add(_ call: ClusterState.ScriptCall) -> Int {
        entries.append((call, nil))
        return entries.count - 1
    }

    /// Keeps the script's reply to the call in `slot`.
    func replied(_ slot: Int, _ reply: RedisReply) {
        guard entries.indices.contains(slot) else { return }
        entries[slot].reply = reply
    }

    /// What each call's client gets once `WAIT` answered `confirmed` (nil: `WAIT` failed or
    /// the connection went), for `needed` replicas within `timeoutMs`: a write the script
    /// refused (or that failed) keeps its own answer; a write done with too few replicas is
    /// an error reply saying it may or may not have been applied.
    func outcomes(confirmed: Int?, needed: Int, timeoutMs: Int) -> [(ClusterState.ScriptCall, RedisReply)] {
        entries.map { entry in
            let reply = entry.reply ?? .disconnected
            guard Self.isDone(reply) else { return (entry.call, reply) }
            if let confirmed, confirmed >= needed { return (entry.call, reply) }
            let why = confirmed.map { "\($0) of \(needed) replicas confirmed it within \(timeoutMs) ms" }
                ?? "the connection to Redis went before replicas confirmed it"
            return (entry.call, .error("write not confirmed (\(why)): it may or may not have been applied"))
        }
    }

    /// Whether a `state` script reply says the write was done (`REV SEQ INDEX KEPT`, read
    /// as `{0, rev, …}` by `ClusterEngine.stateReply`).
    static func isDone(_ reply: RedisReply) -> Bool {
        ClusterEngine.stateReply(reply).elements?.first?.integer == 0
    }
}
