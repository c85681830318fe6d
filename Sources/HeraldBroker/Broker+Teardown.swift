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
    static let inlineLockReleases = 1_000
    static let lockReleaseSlice = 5_000

    /// Removes instance channels: the first `removalSlice` now, the rest in later passes.
    func removeInstances(_ names: [[UInt8]], of owner: Session, reason: RemovalReason) {
        for (position, name) in names.enumerated() {
            if position < Broker.inlineRemovals {
                removeInstance(name, reason: reason)
                continue
            }
            instances.release(name)
            deferredRemovals.append(DeferredRemoval(name: name, owner: owner, reason: reason))
        }
    }

    /// Whether queued teardown work is left for later passes.
    public var hasDeferredWork: Bool {
        removalHead < deferredRemovals.count || lockHead < deferredLocks.count
    }

    /// Runs one slice of every queued teardown; the server calls it once per loop pass
    /// while `hasDeferredWork`.
    public func continueDeferredWork() {
        var budget = Broker.removalSlice
        while budget > 0, removalHead < deferredRemovals.count {
            let removal = deferredRemovals[removalHead]
            removalHead += 1
            budget -= 1
            guard instances.owner(of: removal.name) == nil else { continue }  // declared again
            finishRemoval(of: removal.name, owner: removal.owner.id, ownerSession: removal.owner, reason: removal.reason)
        }
        if removalHead == deferredRemovals.count {
            deferredRemovals = []
            removalHead = 0
        }
        var locksLeft = Broker.lockReleaseSlice
        while locksLeft > 0, lockHead < deferredLocks.count {
            releaseLock(deferredLocks[lockHead])
            lockHead += 1
            locksLeft -= 1
        }
        if lockHead == deferredLocks.count {
            deferredLocks = []
            lockHead = 0
        }
        if locks.count == 0 { locks.forgetMemo() }
        flushSystemEvents()
    }
}

/// An instance channel whose ownership is gone and whose removal waits for a later pass.
struct DeferredRemoval {
    let name: [UInt8]
    /// The owner (kept so the `$sys` event still names it after it disconnected).
    let owner: Session
    let reason: Broker.RemovalReason
}
