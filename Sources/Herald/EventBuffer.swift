import Synchronization

/// Events on their way from the I/O thread to one stream consumer (``EventStream``,
/// ``ThrowingEventStream``), handed over a batch at a time.
///
/// Why not `AsyncStream`: it takes its lock once per `yield` and once per `next()`, and resumes
/// the waiting consumer task for every event it gets while waiting; at a few hundred thousand
/// events per second that made the stream form about 1.75× the closure path in CPU per event.
/// Here the I/O thread appends everything one read pass brought for the stream under one lock
/// (`DeliveryBatch` collects it) and resumes a waiting consumer at most once, handing it the
/// whole batch; the consumer takes everything queued under one lock and works through it
/// locally (`take`).
///
/// The buffering policy bounds what waits here, beyond the batch the consumer is working
/// through. Drops are counted, and reported on the next event that is delivered after them.
final class EventBuffer: Sendable {
    /// One queued event, still undecoded (the consumer decodes it), and the drops it carries.
    struct Item: Sendable {
        let incoming: IncomingEvent
        /// Events lost to the buffer right before this one.
        var dropped: Int
    }

    private struct State {
        var items: [Item] = []
        /// Drops not yet attached to an event: `.oldest` refuses the newest, so the next event
        /// appended reports them.
        var carried = 0
        /// Consumers suspended in `take` while nothing was queued (one, for the one consumer).
        var waiters: [UnsafeContinuation<[Item], Never>] = []
        /// No more events will come (the subscription ended); what is queued is still taken.
        var finished = false
        /// The consumer stopped (cancelled, or a throwing stream threw): nothing more is taken.
        var terminated = false
        /// Unsubscribes; run once when the consumer stops.
        var onTermination: (@Sendable () -> Void)?
    }

    private let limit: Int?
    private let keepsNewest: Bool
    private let state = Mutex(State())
    private let dropTotal = Atomic<Int>(0)
    /// Batches the consumer worked through, freed (and their storage reused) by `append` on
    /// the I/O thread, where their events were allocated (`ReturnedBatches`).
    private let returns = ReturnedBatches<Item>()

    init(buffering: StreamBuffering) {
        switch buffering {
        case .unbounded: (limit, keepsNewest) = (nil, true)
        case .newest(let n): (limit, keepsNewest) = (max(1, n), true)
        case .oldest(let n): (limit, keepsNewest) = (max(1, n), false)
        }
    }

    /// Events dropped so far by the buffering policy.
    var droppedCount: Int { dropTotal.load(ordering: .relaxed) }

    /// Sets what stopping the consumer runs (unsubscribing); at once if it already stopped.
    func setOnTermination(_ action: @escaping @Sendable () -> Void) {
        let runNow = state.withLock { state -> Bool in
            if state.terminated { return true }
            state.onTermination = action
            return false
        }
        if runNow { action() }
    }

    // MARK: The I/O thread's side

    /// Queues one read pass's events for the stream: one lock, and at most one consumer resumed,
    /// with the whole batch. Ignored once the stream finished.
    func append(_ events: [IncomingEvent]) {
        guard !events.isEmpty else { return }
        var batch = returns.reuse() ?? []
        batch.reserveCapacity(events.count)
        for event in events { batch.append(Item(incoming: event, dropped: 0)) }
        let handOff = state.withLock { state -> (UnsafeContinuation<[Item], Never>, [Item])? in
            guard !state.finished else { return nil }
            var lost = 0
            if state.carried > 0 {
                batch[0].dropped += state.carried
                state.carried = 0
            }
            if state.items.isEmpty {
                state.items = batch
            } else {
                state.items.append(contentsOf: batch)
            }
            if let limit, state.items.count > limit {
                let excess = state.items.count - limit
                lost = excess
                if keepsNewest {
                    // The oldest go; the first one kept reports them (and what they carried).
                    let reported = state.items[0..<excess].reduce(excess) { $0 + $1.dropped + $1.incoming.metadata.dropped }
                    state.items.removeFirst(excess)
                    state.items[0].dropped += reported
                } else {
                    // The newest are refused; the next event appended reports them.
                    let refused = state.items[limit...]
                    state.carried += refused.reduce(excess) { $0 + $1.dropped + $1.incoming.metadata.dropped }
                    state.items.removeLast(excess)
                }
            }
            if lost > 0 { dropTotal.add(lost, ordering: .relaxed) }
            guard !state.waiters.isEmpty else { return nil }
            let items = state.items
            state.items = []
            return (state.waiters.removeFirst(), items)
        }
        if let (waiter, items) = handOff { waiter.resume(returning: items) }
    }

    /// No more events will come: the consumer takes what is queued, then sees the end.
    func finish() {
        let waiters = state.withLock { state -> [UnsafeContinuation<[Item], Never>] in
            state.finished = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume(returning: []) }
    }

    // MARK: The consumer's side

    /// The consumer is done with `batch` (what `take` gave it): it is freed on the I/O thread.
    func giveBack(_ batch: [Item]) {
        if !batch.isEmpty { returns.give(batch) }
    }

    /// Everything queued, waiting while nothing is; empty when the stream ended. The calling
    /// task's cancellation ends the stream (and unsubscribes).
    func take(isolation actor: isolated (any Actor)? = #isolation) async -> [Item] {
        if Task.isCancelled {
            terminate()
            return []
        }
        // Without suspending when events are queued (the usual case under load).
        if let ready = state.withLock({ state -> [Item]? in
            guard !state.items.isEmpty else { return nil }
            defer { state.items = [] }
            return state.items
        }) {
            return ready
        }
        return await withTaskCancellationHandler {
            await withUnsafeContinuation(isolation: actor) { (waiter: UnsafeContinuation<[Item], Never>) in
                let ready = state.withLock { state -> [Item]? in
                    if !state.items.isEmpty {
                        defer { state.items = [] }
                        return state.items
                    }
                    if state.finished || state.terminated { return [] }
                    state.waiters.append(waiter)
                    return nil
                }
                if let ready { waiter.resume(returning: ready) }
            }
        } onCancel: {
            terminate()
        }
    }

    /// The consumer stopped: drops what is queued, ends every wait, unsubscribes (once).
    func terminate() {
        let (waiters, action) = state.withLock { state -> ([UnsafeContinuation<[Item], Never>], (@Sendable () -> Void)?) in
            state.terminated = true
            state.finished = true
            state.items = []
            defer {
                state.waiters = []
                state.onTermination = nil
            }
            return (state.waiters, state.onTermination)
        }
        for waiter in waiters { waiter.resume(returning: []) }
        action?()
    }
}
