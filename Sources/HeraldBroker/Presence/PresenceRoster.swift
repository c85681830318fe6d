/// Who is in one channel (issue 36; docs/protocol.md, "Presence"): the connections holding
/// at least one subscription on exactly the channel that is not a signal handler, each once.
///
/// A roster exists only for a channel someone asked presence of (the `presence` op, or a
/// subscription matching `$presence.CH`): it is built once from the subscription index and
/// kept up to date from then on, so a join or a leave costs O(log n) and a page costs what it
/// lists. It goes when its last member leaves.
final class PresenceRoster {
    /// A member that disconnected with an `info.instance` and waits out `presence_grace_ms`:
    /// shown as it was, and replaced without a leave or a join by a connection of the same
    /// user and instance that subscribes in time.
    struct Ghost {
        /// Its user, if any.
        let user: [UInt8]?
        /// Its `info`, raw JSON.
        let info: [UInt8]?
        /// Its `info.instance`.
        let instance: [UInt8]
        /// When its grace ends (broker clock, ms).
        let until: Int
    }

    /// Qualifying subscriptions of each live member.
    private(set) var counts: [ConnectionID: Int] = [:]
    /// Members waiting out their grace.
    private(set) var ghosts: [ConnectionID: Ghost] = [:]
    /// Every member, live or ghost, by client id.
    private(set) var order = SortedIDs()
    /// In count mode: the count watchers were last told (-1: none yet).
    var announcedCount = -1
    /// How many members it holds.
    var memberCount: Int { order.count }

    /// Whether nothing is left in it.
    var isEmpty: Bool { order.count == 0 }

    /// One more qualifying subscription of `id`. - Returns: true when `id` just joined.
    func add(_ id: ConnectionID) -> Bool {
        let held = counts[id, default: 0]
        counts[id] = held + 1
        guard held == 0 else { return false }
        order.insert(id)
        return true
    }

    /// One qualifying subscription of `id` fewer. - Returns: true when `id` just left.
    func drop(_ id: ConnectionID) -> Bool {
        guard let held = counts[id] else { return false }
        if held > 1 {
            counts[id] = held - 1
            return false
        }
        counts[id] = nil
        order.remove(id)
        return true
    }

    /// Keeps `id` as a ghost (it left live membership already or is leaving now).
    func keepAsGhost(_ id: ConnectionID, _ ghost: Ghost) {
        counts[id] = nil
        ghosts[id] = ghost
        order.insert(id)
    }

    /// The ghost of `user`'s `instance`, if one waits.
    func ghost(of user: [UInt8]?, instance: [UInt8]) -> ConnectionID? {
        ghosts.first { $0.value.user == user && $0.value.instance == instance }?.key
    }

    /// Removes ghost `id`. - Returns: it, when it was there.
    @discardableResult
    func removeGhost(_ id: ConnectionID) -> Ghost? {
        guard let ghost = ghosts.removeValue(forKey: id) else { return nil }
        order.remove(id)
        return ghost
    }

    /// Ghosts whose grace ended by `now`.
    func expiredGhosts(now: Int) -> [ConnectionID] {
        ghosts.filter { $0.value.until <= now }.map(\.key).sorted()
    }

    /// Whether `id` is a live member.
    func isLive(_ id: ConnectionID) -> Bool { counts[id] != nil }

    /// At most `limit` members after `after`, and whether more follow.
    func page(after: ConnectionID, limit: Int) -> (ids: [ConnectionID], more: Bool) {
        order.page(after: after, limit: limit)
    }
}
