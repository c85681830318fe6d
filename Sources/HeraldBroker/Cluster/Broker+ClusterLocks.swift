import HeraldWire

/// Locks across nodes (docs/cluster.md, "Locks"): every node keeps every lock of the
/// cluster in its own `LockTable` (owners are global client ids, so remote owners sit beside
/// local ones), so the delivery check stays local. A local `lock`/`unlock` is applied here at
/// once and sent to the others; its answer waits until every node applied it (the interest
/// barrier), so no event published anywhere after the `ok` reaches a locked subscription.
extension Broker {
    /// Sends the locks a `lock`/`unlock` changed to the other nodes and holds the caller's
    /// output (its coming answer first) until every node has applied them.
    func clusterLocksChanged(_ changed: [Lock], added: Bool, by session: Session) {
        guard let cluster, !changed.isEmpty else { return }
        let ticket = cluster.locksChanged(owner: session.id, records: changed.map(ClusterLockRecord.encode),
                                          added: added, held: true)
        if session.barriers.isEmpty { retention.heldSessions.append(session) }
        session.holdOutput(untilTicket: ticket)
    }

    /// A departing local connection's locks: the other nodes release them all (no answer
    /// waits for it).
    func clusterLocksReleased(ownedBy owner: ConnectionID) {
        _ = cluster?.locksChanged(owner: owner, records: [], added: false, held: false)
    }

    /// Locks released one by one without an answer (a reload took the right away).
    func clusterLocksRevoked(_ revoked: [Lock], owner: ConnectionID) {
        guard let cluster, !revoked.isEmpty else { return }
        _ = cluster.locksChanged(owner: owner, records: revoked.map(ClusterLockRecord.encode), added: false, held: false)
    }

    /// Another node's connection took (`added`) or released locks; `records` empty with
    /// `added` false: it left, all its locks go. Malformed records are ignored.
    public func applyClusterLocks(owner: ConnectionID, records: [[UInt8]], added: Bool) {
        guard !records.isEmpty || added else { return releaseClusterLocks(ownedBy: owner) }
        for record in records {
            guard let lock = ClusterLockRecord.decode(record, owner: owner) else { continue }
            if added { locks.add(lock) } else { locks.remove(lock) }
            if let key = lock.subscription { refreshLockFlag(key) }
        }
        if locks.count == 0 { locks.forgetMemo() }
    }

    /// Releases every lock a remote owner holds, a slice per pass like a departing local
    /// connection's (`Broker+Teardown.swift`).
    public func releaseClusterLocks(ownedBy owner: ConnectionID) {
        let detached = locks.detachAll(ownedBy: owner)
        guard !detached.isEmpty else { return }
        deferredLocks.append(DetachedLocks(detached))
        continueLockReleases(budget: Broker.inlineLockReleases)
    }

    /// A node left or was declared down: every lock its connections held goes. Costs the
    /// number of lock owners.
    public func releaseClusterLocks(ofNode node: Int) {
        for owner in locks.owners where ClusterOwner.node(of: owner) == node { releaseClusterLocks(ownedBy: owner) }
    }

    /// After (re)connecting to Redis: the other nodes' locks become exactly `snapshot`
    /// (owner and records, as Redis holds them): locks whose release was missed while
    /// Redis was away go, locks taken meanwhile come. This node's own locks are kept (it
    /// registers them again, `localLockRecords`).
    public func replaceClusterLocks(with snapshot: [(owner: ConnectionID, records: [[UInt8]])], ownNode: Int) {
        var wanted: [ConnectionID: Set<Lock>] = [:]
        for (owner, records) in snapshot where ClusterOwner.node(of: owner) != ownNode {
            wanted[owner, default: []].formUnion(records.compactMap { ClusterLockRecord.decode($0, owner: owner) })
        }
        for owner in locks.owners where ClusterOwner.node(of: owner) != ownNode {
            let stale = locks.owned(by: owner).filter { !(wanted[owner]?.contains($0) ?? false) }
            for lock in stale { releaseLock(lock) }
        }
        for (_, set) in wanted {
            for lock in set where locks.add(lock) {
                if let key = lock.subscription { refreshLockFlag(key) }
            }
        }
        if locks.count == 0 { locks.forgetMemo() }
    }

    /// This node's connections' locks, for registering them again after Redis came back.
    public func localLockRecords(ownNode: Int) -> [(owner: ConnectionID, records: [[UInt8]])] {
        locks.owners.filter { ClusterOwner.node(of: $0) == ownNode }.map { owner in
            (owner, locks.owned(by: owner).map(ClusterLockRecord.encode))
        }
    }

    /// The other nodes answered a `locks {ch}` (`{locked, unlocked, truncated}`, their
    /// subscriptions' global ids) or a channel-wide `lock`/`unlock` (`{covered, [],
    /// truncated}`): this node's lists, read now, come first, then theirs. Nodes that did
    /// not answer in time are left out; a failure answers `locks` `unavailable`, and a
    /// `lock`/`unlock` (which took effect here) with this node's list.
    func finishLocksQuery(_ waiting: ClusterState.Waiting, of name: [UInt8], for session: Session, result: ClusterValue) {
        let parts = result.elements ?? []
        let gathered = parts.count == 3
        let first = gathered ? (parts[0].elements ?? []).compactMap(\.bytes) : []
        let second = gathered ? (parts[1].elements ?? []).compactMap(\.bytes) : []
        guard waiting.op == .locks else {
            // A channel-wide `lock`/`unlock`, applied here already (and sent to Redis, or
            // registered again when it is back): with the other nodes' lists or, when they
            // could not be asked, this node's alone. At most `budgets.lockList` in all.
            let here = coveredHere(name, for: session)
            let covered = here.covered + first
            let truncated = here.truncated || (gathered && parts[2].int == 1) || covered.count > budgets.lockList
            return answerLock(session, waiting.op, pattern: name, covered: Array(covered.prefix(budgets.lockList)),
                              truncated: truncated, released: waiting.released)
        }
        guard gathered else { return failUnavailable(session, result) }
        var lists = lockLists(of: name, for: session.user)
        lists.locked += first
        lists.unlocked += second
        answerLocks(session, name, lists: lists)
    }
}
