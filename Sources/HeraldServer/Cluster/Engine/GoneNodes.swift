/// The node indexes this node saw confirmed gone (left, or declared down by the reaper),
/// the most recent `capacity` of them: an index is never used again (a node that comes back
/// joins under a new one), so anything heard later under a gone index is a late message of
/// an old incarnation, an acknowledgement above all, and must not put the index back in the
/// barriers, which would then wait the barrier timeout for it.
///
/// Bounded: every reset or restart retires an index, and a cluster that runs for years must
/// not keep them all. An index older than the last `capacity` gone ones is forgotten; its
/// late message, if one still came, costs one barrier timeout, as before.
struct GoneNodes {
    private var members: Set<Int> = []
    private var order: [Int] = []
    private var start = 0
    /// How many indexes are kept.
    let capacity: Int

    /// An empty list keeping at most `capacity` indexes.
    init(capacity: Int = 4_096) {
        self.capacity = max(1, capacity)
    }

    /// Whether `node` was seen gone (and is still remembered).
    func contains(_ node: Int) -> Bool { members.contains(node) }

    /// How many indexes are remembered.
    var count: Int { members.count }

    /// Remembers `node` as gone, forgetting the oldest past the capacity.
    mutating func insert(_ node: Int) {
        guard members.insert(node).inserted else { return }
        order.append(node)
        while members.count > capacity {
            members.remove(order[start])
            start += 1
        }
        if start > capacity {
            order.removeFirst(start)
            start = 0
        }
    }
}
