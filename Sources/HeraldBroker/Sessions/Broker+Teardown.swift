/// Teardown in slices: what one connection leaves behind (its subscriptions' place in the
/// index, its links, its declared channels, its locks)
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
    /// Links of a departed connection dropped at once, and per pass after that (issue 32:
    /// 100,000 held the loop 0.2–0.27 s).
    static let inlineLinkDrops = 200
    static let linkDropSlice = 5_000

    /// Queues the links of departed `owner` (already out of its set) to leave the table, the
    /// first `inlineLinkDrops` now.
    func deferLinkDrops(_ channels: [[UInt8]], ownedBy owner: ConnectionID) {
        deferredLinkDrops.append((owner, channels, 0))
        departedLinkOwners.insert(owner)
        continueLinkDrops(budget: Broker.inlineLinkDrops)
    }

    /// Drops up to `budget` queued links, oldest departure first (a link linked again since
    /// has another owner and stays), stopping early once `isOverBudget` says so.
    /// - Returns: whether it stopped for the clock.
    @discardableResult
    func continueLinkDrops(budget: Int, isOverBudget: () -> Bool = { false }) -> Bool {
        var done = 0
        while done < budget, var batch = deferredLinkDrops.first {
            while done < budget, batch.next < batch.channels.count {
                if done % Broker.itemsPerClockRead == Broker.itemsPerClockRead - 1 && isOverBudget() {
                    deferredLinkDrops[0] = batch
                    return true
                }
                let channel = batch.channels[batch.next]
                batch.next += 1
                done += 1
                guard links[channel]?.owner == batch.owner else { continue }
                links[channel] = nil
                directoryDrop(channel)
            }
            guard batch.next == batch.channels.count else {
                deferredLinkDrops[0] = batch
                break
            }
            departedLinkOwners.remove(batch.owner)
            deferredLinkDrops.removeFirst()
        }
        return false
    }

    /// Ended subscriptions taken out of the index at once, and per pass after that (issue 32:
    /// a connection leaving with 100,000 held the loop 0.5–2.6 s).
    static let inlineUnindexing = 500
    static let unindexSlice = 5_000

    /// Queues ended subscriptions of `session` (already inactive and given back) to leave the
    /// index, the first `inlineUnindexing` now.
    func deferUnindexing(_ subscriptions: [Subscription?], of session: Session) {
        deferredUnindexing.append(DeferredUnindexing(session: session, subscriptions: subscriptions))
        continueUnindexing(budget: Broker.inlineUnindexing)
    }

    /// Takes up to `budget` queued subscriptions out of the index, oldest first, stopping
    /// early once `isOverBudget` says so. - Returns: whether it stopped for the clock.
    @discardableResult
    func continueUnindexing(budget: Int, isOverBudget: () -> Bool = { false }) -> Bool {
        var done = 0
        while done < budget, let batch = deferredUnindexing.first {
            while done < budget, let subscription = batch.take() {
                if done % Broker.itemsPerClockRead == Broker.itemsPerClockRead - 1 && isOverBudget() {
                    unindex(subscription)
                    return true
                }
                unindex(subscription)
                done += 1
            }
            guard batch.isDone else { break }
            deferredUnindexing.removeFirst()
        }
        return false
    }

    /// Ends every instance channel `owner` has declared: ownership at once (O(1), see
    /// `InstanceChannels.releaseAll`), the first `inlineRemovals` removals now, the rest a
    /// slice per loop pass.
    /// - Returns: how many channels it owned.
    func removeAllInstances(of owner: Session, leaving: Bool, reason: RemovalReason) -> Int {
        guard let names = instances.releaseAll(of: owner.id, leaving: leaving), names.count > 0 else { return 0 }
        let count = names.count
        // Consumed, so the batch holds the only reference: a second one made the first
        // slice copy all 400,000 names (49 ms) to empty one slot.
        deferredRemovals.append(DeferredRemoval(names: consume names, owner: owner, reason: reason))
        continueRemovals(budget: Broker.inlineRemovals)
        return count
    }

    /// Finishes up to `budget` queued removals, oldest first, stopping early once
    /// `isOverBudget` says the pass has run long enough (asked every `itemsPerClockRead`).
    /// - Returns: whether it stopped for the clock (then nothing else runs this pass).
    @discardableResult
    private func continueRemovals(budget: Int, isOverBudget: () -> Bool = { false }) -> Bool {
        var done = 0
        while done < budget, removalHead < deferredRemovals.count {
            let batch = deferredRemovals[removalHead]
            while done < budget, !batch.isDone {
                if done % Broker.itemsPerClockRead == Broker.itemsPerClockRead - 1 && isOverBudget() { return true }
                // The slot is emptied as it is taken, so the names are freed a slice at a time
                // rather than all together when the batch ends.
                guard let name = batch.take() else { continue }
                done += 1
                // A name declared again since keeps its new owner and its subscribers.
                guard instances.forgetStaleClaim(name, of: batch.owner.id) else { continue }
                finishRemoval(of: name, owner: batch.owner.id, ownerSession: batch.owner, reason: batch.reason)
            }
            if batch.isDone { removalHead += 1 }
        }
        if removalHead == deferredRemovals.count {
            deferredRemovals = []
            removalHead = 0
        }
        return false
    }

    /// Whether queued teardown work is left for later passes.
    /// Also true while a `since` replay has something to queue (`Broker+Replay.swift`): a
    /// replay is the same kind of work, done a slice per pass while the loop stays awake.
    public var hasDeferredWork: Bool {
        removalHead < deferredRemovals.count || !deferredLocks.isEmpty || !deferredUnindexing.isEmpty
            || !deferredLinkDrops.isEmpty || hasRunnableReplay
    }

    /// Runs one slice of every queued teardown, and the next window of every `since` replay
    /// whose connection drained; the server calls it once per loop pass while `hasDeferredWork`.
    ///
    /// A slice ends at `removalSlice` removals and `lockReleaseSlice` releases, or earlier
    /// when `isOverBudget` (the server's clock against its pass budget) says so: an item's
    /// cost is mostly cache misses in tables of millions of names, so a count alone held
    /// the loop 8-14 ms per pass during a 400,000-name teardown.
    public func continueDeferredWork(isOverBudget: () -> Bool = { false }) {
        if !continueUnindexing(budget: Broker.unindexSlice, isOverBudget: isOverBudget),
           !continueLinkDrops(budget: Broker.linkDropSlice, isOverBudget: isOverBudget),
           !continueRemovals(budget: Broker.removalSlice, isOverBudget: isOverBudget) {
            continueLockReleases(budget: Broker.lockReleaseSlice, isOverBudget: isOverBudget)
        }
        continueReplays(isOverBudget: isOverBudget)
        flushSystemEvents()
    }

    /// Items between two looks at the pass clock.
    static let itemsPerClockRead = 64

    /// Releases up to `budget` locks of departed connections, oldest departure first,
    /// stopping early once `isOverBudget` says so.
    func continueLockReleases(budget: Int, isOverBudget: () -> Bool = { false }) {
        var done = 0
        while done < budget, let batch = deferredLocks.first {
            while done < budget, let lock = batch.next() {
                locks.releaseDetached(lock)
                if let key = lock.subscription { refreshLockFlag(key) }
                done += 1
                if done % Broker.itemsPerClockRead == 0 && isOverBudget() { break }
            }
            if batch.isDone {
                deferredLocks.removeFirst()
            } else {
                break
            }
        }
        if locks.count == 0 { locks.forgetMemo() }
    }
}

/// A departed connection's locks, released a slice per pass, shard by shard; each shard is
/// freed once released, so no pass frees a million locks at once. They left their owner's
/// set at once (`LockTable.detachAll`) and suppress deliveries until released.
final class DetachedLocks {
    private var shards: [Set<Lock>]
    private var shard = 0
    private var position: Set<Lock>.Index?

    init(_ shards: [Set<Lock>]) {
        self.shards = shards
        self.position = shards.first?.startIndex
    }

    /// Whether every lock was handed out.
    var isDone: Bool { shard >= shards.count }

    /// The next lock to release, or nil when none is left.
    func next() -> Lock? {
        while shard < shards.count {
            if let at = position, at != shards[shard].endIndex {
                position = shards[shard].index(after: at)
                return shards[shard][at]
            }
            shards[shard] = []
            shard += 1
            position = shard < shards.count ? shards[shard].startIndex : nil
        }
        return nil
    }
}

/// Instance channels whose ownership ended together and whose removal goes on in later
/// passes, read from `next`. A class so the slice advances it in place.
final class DeferredRemoval {
    private var names: InstanceChannels.OwnedNames
    private var next = 0
    /// The owner (kept so the `$sys` event still names it after it disconnected).
    let owner: Session
    let reason: Broker.RemovalReason

    init(names: InstanceChannels.OwnedNames, owner: Session, reason: Broker.RemovalReason) {
        self.names = names
        self.owner = owner
        self.reason = reason
    }

    /// Whether every slot was handed out.
    var isDone: Bool { next >= names.slots }

    /// The next slot's name (nil for a slot emptied before the owner left), emptying it so
    /// its bytes go now rather than with the batch.
    func take() -> [UInt8]? {
        let name = names.take(at: next)
        next += 1
        return name
    }
}

/// A departed (or half-closed) connection's ended subscriptions, taken out of the index a
/// slice per pass. It holds the session: a subscription refers to its session unretained
/// (`Subscription.owner`), and those still in the index may be looked at (a fan-out checks
/// `isActive` first; a listing reads the client id) until they leave it. Each slot is emptied
/// as it is taken, so the subscriptions are freed a slice at a time.
final class DeferredUnindexing {
    /// The connection they belonged to, alive until the last one left the index.
    let session: Session
    private var subscriptions: [Subscription?]
    private var next = 0

    init(session: Session, subscriptions: [Subscription?]) {
        self.session = session
        self.subscriptions = subscriptions
    }

    /// Whether every subscription was handed out.
    var isDone: Bool { next >= subscriptions.count }

    /// The next subscription to take out of the index, or nil when none is left.
    func take() -> Subscription? {
        guard next < subscriptions.count else { return nil }
        let subscription = subscriptions[next]
        subscriptions[next] = nil
        next += 1
        return subscription
    }
}
