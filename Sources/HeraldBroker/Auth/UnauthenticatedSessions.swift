/// The connections that have not authenticated yet, oldest first (`max_unauthenticated`).
///
/// A FIFO of connection ids with lazy removal: `remove` forgets an id in O(1) and leaves its
/// place in the queue stale; `oldest` skips stale places. The queue is compacted once more
/// than half of it is stale, so it stays within twice the live count and every operation is
/// O(1) amortised.
struct UnauthenticatedSessions {
    private var members = Set<ConnectionID>()
    private var order: [ConnectionID] = []
    private var head = 0

    /// Connections waiting to authenticate.
    var count: Int { members.count }

    /// Adds a new connection (ids only grow, so it is the newest).
    mutating func insert(_ id: ConnectionID) {
        guard members.insert(id).inserted else { return }
        order.append(id)
    }

    /// Forgets a connection that authenticated or left.
    mutating func remove(_ id: ConnectionID) {
        guard members.remove(id) != nil else { return }
        let queued = order.count - head
        if queued > 64 && queued > 2 * members.count { compact() }
    }

    /// Whether a connection is still waiting.
    func contains(_ id: ConnectionID) -> Bool { members.contains(id) }

    /// The connection waiting longest, if any.
    mutating func oldest() -> ConnectionID? {
        while head < order.count {
            let id = order[head]
            if members.contains(id) { return id }
            head += 1
        }
        return nil
    }

    /// Forgets everyone (auth was turned off).
    mutating func removeAll() {
        members.removeAll()
        order.removeAll()
        head = 0
    }

    private mutating func compact() {
        order = order[head...].filter { members.contains($0) }
        head = 0
    }
}
