import Dispatch

/// Restoring after a reconnect (docs/client.md, "Reconnect and restore").
///
/// Everything the client holds goes out in one write right after `hello`. A refusal that may
/// pass (`RestoreItem.retries`: after a failover the client's own previous connection still
/// holds its instance channels and links until the cluster declares that node down) is tried
/// again with backoff (`RestoreRetry`) for up to `configuration.restoreRetryTimeout`, and the
/// item stays wanted meanwhile. A final refusal forgets the item and reports
/// `.restoreFailed(kind:channel:cause:)`: nothing is dropped silently. A retry belongs to the
/// connection it was scheduled on (`ClientState.generation`): after another loss the next
/// connection restores everything itself.
extension HeraldClient {
    /// The restore frames for a new connection, in order: instance channels (so this client
    /// owns them again before anyone subscribes through it), links (signals route through them
    /// again), channel locks (they cover subscriptions made later, so restored subscriptions get
    /// no event the lock should suppress), then each subscription followed at once by the locks
    /// on its name (the daemon refuses a name lock without the subscription).
    func restoreLines(_ state: inout ClientState) -> [UInt8] {
        state.generation += 1
        // A lock on a subscription's name goes out with that subscription only: one whose
        // subscription is gone (the lock outlives it, for a later re-bind) is not waited for.
        let sentLocks = state.locks.filter { lock in lock.sub.map { state.subscriptions[$0] != nil } ?? true }
        state.unrestored = Set(state.declared.map { RestoreKey.instanceChannel($0) } + state.links.map { .link($0) }
            + sentLocks.map { .lock($0) } + state.subscriptions.keys.map { .subscription($0) })
        var lines: [UInt8] = []
        for name in state.declared { lines += restoreLine(.instanceChannel(name), state: &state) }
        for link in state.links { lines += restoreLine(.link(link), state: &state) }
        for lock in state.locks where lock.sub == nil { lines += restoreLine(.lock(lock), state: &state) }
        let sameEpoch = state.previousEpoch != nil && state.previousEpoch == state.info?.epoch
        for record in state.subscriptions.values.sorted(by: { $0.order < $1.order }) {
            var since: Int?
            if sameEpoch, !record.isPattern, !record.refetchesOnRestore, let last = record.lastSeq { since = last }
            if !record.everAcked, let requested = record.requestedSince { since = requested }
            lines += subscribeLine(record, since: since, restoring: true, state: &state)
        }
        return lines
    }

    /// The frame restoring `item` on the current connection; empty when it is no longer wanted.
    /// - Parameter retry: the retry this attempt is (nil: the first, right after `hello`).
    func restoreLine(_ item: RestoreItem, retry: RestoreRetry? = nil, state: inout ClientState) -> [UInt8] {
        guard item.isWanted(in: state) else { return [] }
        if case .subscription(let binding, let since) = item, let record = state.subscriptions[binding.name] {
            return subscribeLine(record, since: since, restoring: true, retry: retry, state: &state)
        }
        let generation = state.generation
        let rid = state.register(timeout: nil) { [weak self] result in
            self?.restoreAnswered(item, result: result, retry: retry, generation: generation)
        }
        var writer: FrameWriter
        switch item {
        case .instanceChannel(let name):
            writer = FrameWriter(op: "declare", rid: rid)
            writer.string("ch", name)
        case .link(let link):
            writer = FrameWriter(op: "link", rid: rid)
            writer.string("ch", link.channel)
            writer.string("parent", link.parent)
        case .lock(let lock):
            return lockLine(lock, rid: rid, client: state.info?.client ?? "")
        case .subscription:
            return []
        }
        return writer.finished()
    }

    /// The answer to a restore's `declare`, `link` or `lock`: a passing refusal is retried, a
    /// final one forgets the item and is reported. A name lock's `not_found` is neither: its
    /// subscription's own `sub` failed (reported on its own) or is being retried, and the
    /// retry carries the lock again.
    private func restoreAnswered(_ item: RestoreItem, result: Result<ServerFrame, HeraldClientError>,
                                 retry: RestoreRetry?, generation: Int) {
        // Disconnected or closed: the next connection restores it.
        if case .failure(let error) = result, case .server(let code, _, _) = error {
            if case .lock(let lock) = item, lock.sub != nil, code == "not_found" {
                settle(item, generation: generation)
                return
            }
            if item.retries(code), retryRestore(item, after: retry, generation: generation) { return }
            let (failure, handler) = state.withLock { state -> (HeraldClientError?, (@Sendable (HeraldClientError) -> Void)?) in
                let failure = item.failure(error, in: state)
                let handler = item.errorHandler(in: state)
                return (item.forget(in: &state) ? failure : nil, handler)
            }
            if let failure { report(failure, to: handler) }
        } else if case .failure = result {
            return
        }
        settle(item, generation: generation)
    }

    /// `item` is back (or refused for good) on connection `generation`: tells state observers
    /// when it was the last thing the restore waited for.
    func settle(_ item: RestoreItem, generation: Int) {
        let observers = state.withLock { state -> [AsyncStream<ConnectionState>.Continuation] in
            guard state.generation == generation else { return [] }
            return state.settleRestore(item.key)
        }
        notify(observers, of: .restored)
    }

    /// Schedules the next attempt at restoring `item` after a passing refusal.
    /// - Parameters:
    ///   - retry: the attempt just refused, nil for the first.
    ///   - generation: the connection the attempt went out on.
    /// - Returns: false when the bound has passed (or retrying is off): the refusal is final.
    func retryRestore(_ item: RestoreItem, after retry: RestoreRetry?, generation: Int) -> Bool {
        let now = IOLoop.now
        let next: RestoreRetry?
        if let retry {
            next = retry.next(now: now)
        } else {
            next = RestoreRetry.first(within: configuration.restoreRetryTimeout, now: now)
        }
        guard let next else { return false }
        DispatchQueue.global().asyncAfter(deadline: .now() + next.jittered) { [weak self] in
            self?.resendRestore(item, retry: next, generation: generation)
        }
        return true
    }

    /// Sends a scheduled retry, if its connection is still up and the item still wanted.
    private func resendRestore(_ item: RestoreItem, retry: RestoreRetry, generation: Int) {
        var observers: [AsyncStream<ConnectionState>.Continuation] = []
        let wake = state.withLock { state -> Bool in
            guard state.linkUp, state.generation == generation else { return false }
            let line = restoreLine(item, retry: retry, state: &state)
            // No longer wanted (removed, unlinked, cancelled meanwhile): nothing to wait for.
            if line.isEmpty { observers = state.settleRestore(item.key) }
            return !line.isEmpty && state.enqueue(line)
        }
        if wake { loop.wake() }
        notify(observers, of: .restored)
    }
}
