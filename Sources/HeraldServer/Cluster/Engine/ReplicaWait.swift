import HeraldBroker

/// The writes one `WAIT` confirms (`cluster.wait_replicas`): the retained-state calls and
/// the publish batches holding an acknowledged `pub` (one with `rid`) sent on a shard's data
/// link since the previous `WAIT`, with their script replies as they come. `WAIT` covers
/// every earlier write of its connection, so one per loop pass is enough; Redis answers in
/// order, so every script reply is in before the `WAIT` reply. The writes are answered in
/// the order they were sent.
final class ReplicaWait {
    /// What a held write is: a state call, answered through `answered`, or a publish batch,
    /// finished with its script reply and, when replicas did not confirm it, why.
    enum Write {
        /// A retained-state script call.
        case call(ClusterState.ScriptCall)
        /// A `publish` script call: `finish(reply, unconfirmed)`.
        case publish((RedisReply, String?) -> Void)
    }

    /// The writes, in the order sent, and each one's reply once it came.
    private(set) var entries: [(write: Write, reply: RedisReply?)] = []

    /// Whether no write joined yet.
    var isEmpty: Bool { entries.isEmpty }

    /// Adds a state call about to be sent. - Returns: its slot for `replied`.
    func add(_ call: ClusterState.ScriptCall) -> Int { add(.call(call)) }

    /// Adds a write about to be sent. - Returns: its slot for `replied`.
    func add(_ write: Write) -> Int {
        entries.append((write, nil))
        return entries.count - 1
    }

    /// Keeps the script's reply to the write in `slot`.
    func replied(_ slot: Int, _ reply: RedisReply) {
        guard entries.indices.contains(slot) else { return }
        entries[slot].reply = reply
    }

    /// What each state call's client gets once `WAIT` answered `confirmed` (nil: `WAIT`
    /// failed or the connection went), for `needed` replicas within `timeoutMs`: a write the
    /// script refused (or that failed) keeps its own answer; a write done with too few
    /// replicas is an error reply saying it may or may not have been applied.
    func outcomes(confirmed: Int?, needed: Int, timeoutMs: Int) -> [(ClusterState.ScriptCall, RedisReply)] {
        var outcomes: [(ClusterState.ScriptCall, RedisReply)] = []
        settle(confirmed: confirmed, needed: needed, timeoutMs: timeoutMs) { call, reply in outcomes.append((call, reply)) }
        return outcomes
    }

    /// Answers every write in the order sent: state calls through `answer`, publish batches
    /// through their own `finish`, with the reason when replicas did not confirm them.
    func settle(confirmed: Int?, needed: Int, timeoutMs: Int,
                answer: (ClusterState.ScriptCall, RedisReply) -> Void) {
        let unconfirmed = Self.unconfirmed(confirmed: confirmed, needed: needed, timeoutMs: timeoutMs)
        for entry in entries {
            let reply = entry.reply ?? .disconnected
            switch entry.write {
            case .call(let call):
                guard Self.isDone(reply), let unconfirmed else { answer(call, reply); continue }
                answer(call, .error(unconfirmed))
            case .publish(let finish):
                finish(reply, reply.failure == nil ? unconfirmed : nil)
            }
        }
    }

    /// Why writes were not confirmed, or nil when `confirmed` replicas are enough.
    static func unconfirmed(confirmed: Int?, needed: Int, timeoutMs: Int) -> String? {
        if let confirmed, confirmed >= needed { return nil }
        let why = confirmed.map { "\($0) of \(needed) replicas confirmed it within \(timeoutMs) ms" }
            ?? "the connection to Redis went before replicas confirmed it"
        return "write not confirmed (\(why)): it may or may not have been applied"
    }

    /// Whether a `state` script reply says the write was done (`REV SEQ INDEX KEPT`, read
    /// as `{0, rev, …}` by `ClusterEngine.stateReply`).
    static func isDone(_ reply: RedisReply) -> Bool {
        ClusterEngine.stateReply(reply).elements?.first?.integer == 0
    }
}
