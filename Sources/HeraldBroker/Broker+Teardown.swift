/// Teardown in slices: what one connection leaves behind (its declared channels, its locks)
/// is released a slice per loop pass, not all at once (issue 12).
///
/// Why: each item costs little, but a connection can hold hundreds of thousands of them, and
/// releasing 400,000 declared channels in one go held the loop for everyone for a third of
/// a second. The first slice goes at once, so small teardowns (nearly all of them) finish
/// inside the request or disconnect as before; the rest waits in queues the server drains a
/// slice per pass (`continueDeferredWork`, keeping the loop awake while any is left).
///
/// What stays exact meanwhile: a removed instance channel's ownership is released at once
/// (its name can be declared again; a removal still queued for a name declared again is
/// skipped, so the new owner's channel and subscribers stay), and a departed connection's
/// queued locks still suppress deliveries until their slice runs, a few passes later.
extension Broker {
    /// Instance channels removed at once (inside the request or disconnect), and per pass
    /// after that. Small, because several connections may leave in one pass.
    static let inlineRemovals = 100
    static let removalSlice = 1_000
    /// Locks released at once, and per pass after that.
    static let inlineLockReleases = 200
    static let lockReleaseSlice = 5_000

    /// Ends every instance channel `owner` has declared: ownership at once (O(1), see
    /// `InstanceChannels.releaseAll`), the first `inlineRemovals` removals now, the rest a
    /// slice per loop pass.
    /// - Returns: how many channels it owned.
    func removeAllInstances(of owner: Session, leaving: Bool, reason: RemovalReason) -> Int {
        let names = instances.releaseAll(of: owner.id, leaving: leaving)
        guard !names.isEmpty else { return 0 }
        deferredRemovals.append(DeferredRemoval(names: names, owner: owner, reason: reason))
        continueRemovals(budget: Broker.inlineRemovals)
        return names.count
    }

    /// Finishes up to `budget` queued removals, oldest first.
    private func continueRemovals(budget: Int) {
        var left = budget
        while left > 0, removalHead < deferredRemovals.count {
            let batch = deferredRemovals[removalHead]
            while left > 0, batch.next < batch.names.count {
                let name = batch.names[batch.next]
                batch.next += 1
                left -= 1
                // A name declared again since keeps its new owner and its subscribers.
                guard instances.forgetStaleClaim(name, of: batch.owner.id) else { continue }
                finishRemoval(of: name, owner: batch.owner.id, ownerSession: batch.owner, reason: batch.reason)
            }
            if batch.next == batch.names.count { removalHead += 1 }
        }
        if removalHead == deferredRemovals.count {
            deferredRemovals = []
            removalHead = 0
        }
    }

    /// Whether queued teardown work is left for later passes.
    public var hasDeferredWork: Bool {
        removalHead < deferredRemovals.count || !deferredLocks.isEmpty
    }

    /// Runs one slice of every queued teardown; the server calls it once per loop pass
    /// while `hasDeferredWork`.
    public func continueDeferredWork() {
        continueRemovals(budget: Broker.removalSlice)
        continueLockReleases(budget: Broker.lockReleaseSlice)
        flushSystemEvents()
    }

    /// Releases up to `budget` locks of departed connections, oldest departure first.
    func continueLockReleases(budget: Int) {
        var left = budget
        while left > 0, let batch = deferredLocks.first {
            while left > 0, batch.next != batch.locks.endIndex {
                let lock = batch.locks[batch.next]
                batch.next = batch.locks.index(after: batch.next)
                locks.releaseDetached(lock)
                if let key = lock.subscription { refreshLockFlag(key) }
                left -= 1
            }
            if batch.next == batch.locks.endIndex { deferredLocks.removeFirst() }
        }
        if locks.count == 0 { locks.forgetMemo() }
    }
}

/// A departed connection's locks, released from `next` on, a slice per pass. They left
/// their owner's set at once (`LockTable.detachAll`) and suppress deliveries until released.
final class DetachedLocks {
    let locks: Set<Lock>
    var next: Set<Lock>.Index

    init(_ locks: Set<Lock>) {
        self.locks = locks
        self.next = locks.startIndex
    }
}

/// Instance channels whose ownership ended together and whose removal goes on in later
/// passes, read from `next`. A class so the slice advances it in place.
final class DeferredRemoval {
    let names: [[UInt8]]
    var next = 0
    /// The owner (kept so the `$sys` event still names it after it disconnected).
    let owner: Session
    let reason: Broker.RemovalReason

    init(names: [[UInt8]], owner: Session, reason: Broker.RemovalReason) {
        self.names = names
        self.owner = owner
        self.reason = reason
    }
}
