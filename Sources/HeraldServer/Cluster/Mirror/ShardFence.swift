/// Releases that wait for the data shards (issue 33; docs/cluster.md, "Locks"): with several
/// Redis primaries an event comes through its channel's shard while a lock change comes
/// through shard 0, so an `unlock` heard at once could overtake an event published under the
/// lock. A release (`U`, `X`) is therefore applied only once a fence, published by this
/// node to its own channel on every serving data shard after it heard the release, has come
/// back from each: every event such a shard ran before the fence has then arrived here and
/// met the lock. Changes heard meanwhile (of any table) queue behind it, so changes and
/// their acknowledgements keep their order.
///
/// Pure: the engine sends the fences and applies what comes out. `Change` is opaque.
struct ShardFence<Change> {
    /// A change heard while a fence is out, with the version to acknowledge once applied.
    struct Queued {
        /// The change.
        let change: Change
        /// The version to acknowledge after applying it (nil: none).
        let acknowledge: Int?
        /// Whether it is a release that needs its own fence.
        let needsFence: Bool
    }

    /// What the engine does next, in order.
    enum Step {
        /// Apply the change, then acknowledge `acknowledge` when there is one.
        case apply(Change, acknowledge: Int?)
        /// Publish fence `id` to this node's channel on each of `shards`.
        case sendFence(id: Int, shards: [Int])
    }

    /// The fence out: its id, the shards that have not answered, and when it was sent.
    private var out: (id: Int, waiting: Set<Int>, since: UInt64)?
    /// The changes behind it, oldest first (the first is the release it was sent for).
    private(set) var queue: [Queued] = []
    private var nextID = 1

    /// An empty fence.
    init() {}

    /// Whether a fence is out.
    var isWaiting: Bool { out != nil }

    /// A change was heard (once the node is ready). `serving`: the data shards whose links
    /// serve now (a shard that does not can deliver nothing meanwhile, so none is waited for).
    mutating func heard(_ change: Change, acknowledge: Int?, needsFence: Bool, serving: [Int], now: UInt64) -> [Step] {
        queue.append(Queued(change: change, acknowledge: acknowledge, needsFence: needsFence))
        guard out == nil else { return [] }
        return drain(serving: serving, now: now)
    }

    /// Fence `id` came back from `shard`.
    mutating func returned(_ id: Int, from shard: Int, serving: [Int], now: UInt64) -> [Step] {
        guard var current = out, current.id == id else { return [] }
        current.waiting.remove(shard)
        out = current
        return current.waiting.isEmpty ? release(serving: serving, now: now) : []
    }

    /// `shard` stopped serving: the fence out does not wait for it.
    mutating func shardLost(_ shard: Int, serving: [Int], now: UInt64) -> [Step] {
        guard var current = out, current.waiting.remove(shard) != nil else { return [] }
        out = current
        return current.waiting.isEmpty ? release(serving: serving, now: now) : []
    }

    /// A fence out for longer than `timeoutNs` is given up (a shard that neither answers nor
    /// drops): what waited behind it applies.
    mutating func expire(now: UInt64, timeoutNs: UInt64, serving: [Int]) -> [Step] {
        guard let current = out, now &- current.since > timeoutNs else { return [] }
        return release(serving: serving, now: now)
    }

    /// Everything queued applies now, with no fence (the subscription or a node went: the
    /// snapshots or the node's removal come next, and must land over every change heard).
    mutating func flush() -> [Step] {
        out = nil
        defer { queue.removeAll() }
        return queue.map { .apply($0.change, acknowledge: $0.acknowledge) }
    }

    /// The fence out is complete: the release it was for and the changes behind it apply,
    /// up to the next release, which gets a fence of its own.
    private mutating func release(serving: [Int], now: UInt64) -> [Step] {
        out = nil
        guard !queue.isEmpty else { return [] }
        let first = queue.removeFirst()
        return [.apply(first.change, acknowledge: first.acknowledge)] + drain(serving: serving, now: now)
    }

    /// Applies queued changes until one needs a fence, and sends that one's fence.
    private mutating func drain(serving: [Int], now: UInt64) -> [Step] {
        var steps: [Step] = []
        while let next = queue.first {
            if next.needsFence && !serving.isEmpty {
                let id = nextID
                nextID += 1
                out = (id, Set(serving), now)
                steps.append(.sendFence(id: id, shards: serving))
                return steps
            }
            queue.removeFirst()
            steps.append(.apply(next.change, acknowledge: next.acknowledge))
        }
        return steps
    }
}
