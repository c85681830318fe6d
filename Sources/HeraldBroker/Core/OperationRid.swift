/// A connection's own `rid` as it sent it: how `cancel {of}` finds the `req`s and `signal`s
/// that connection started.
///
/// Why the connection is part of the key: `rid`s are chosen by clients and repeat across
/// connections (every client starts at 1), and a connection may only withdraw its own
/// operations. The `rid` is kept as its JSON text, byte for byte as sent (`"q1"`, `17`), so
/// `of` matches only when it is written the same way.
struct OperationRid: Hashable {
    /// The connection that sent the operation.
    let connection: ConnectionID
    /// The operation's `rid`, its raw JSON text.
    let rid: [UInt8]
}

/// Operation ids (requests or signals) by their sender's `rid`: a few entries per
/// operation that carried a `rid`, added and removed with the operation itself.
struct OperationsByRid {
    private var ids: [OperationRid: Set<Int>] = [:]

    /// Notes that operation `id` was sent by `connection` with `rid` (nothing without one).
    mutating func insert(_ id: Int, connection: ConnectionID, rid: [UInt8]?) {
        guard let rid else { return }
        ids[OperationRid(connection: connection, rid: rid), default: []].insert(id)
    }

    /// Forgets operation `id` (it ended, was answered or withdrawn).
    mutating func remove(_ id: Int, connection: ConnectionID, rid: [UInt8]?) {
        guard let rid else { return }
        let key = OperationRid(connection: connection, rid: rid)
        ids[key]?.remove(id)
        if ids[key]?.isEmpty == true { ids[key] = nil }
        // Dictionaries keep their capacity; a burst should not pin it forever.
        if ids.isEmpty && ids.capacity > 4096 { ids = [:] }
    }

    /// The operations still under way that `key` names, oldest first.
    func ids(for key: OperationRid) -> [Int] {
        (ids[key] ?? []).sorted()
    }

    /// How many distinct `rid`s are noted (for tests of leaks).
    var count: Int { ids.count }
}
