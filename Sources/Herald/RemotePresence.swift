import Dispatch
import Observation
import Synchronization

/// A local mirror of who is in one channel, kept current by the daemon's presence events.
///
/// Made by ``HeraldClient/presence(of:info:options:)``, which returns once the mirror holds the
/// member list. Under the hood: a subscription to `$presence.CH` and `presence` pages read
/// after the daemon confirmed it (so no join or leave falls between the two), read again after
/// every reconnect (the client ids changed; after a daemon restart everything did), after a
/// `gap`, after the daemon told only a count (a burst of changes, or a large channel; in
/// cluster mode each node tells its own count, and the mirror reads the total), and
/// when a leave names a member the mirror does not hold. Joins and leaves that arrive while
/// pages are read are applied to the pages already read and left to the pages still to come,
/// which show them.
///
/// Past ``PresenceOptions/maxListed`` members the mirror keeps only ``count``
/// (``isCountOnly``), as the daemon's own watchers get counts past `presence_max_members`.
///
/// Observers run on the client's `.ordered` queue, in order, never under a lock. It is
/// `Observable` (reading ``members`` or ``count`` inside `withObservationTracking` registers
/// it), a ``ValueSource`` (so `onMainActor()`, `map` and `combine` work on its
/// ``PresenceState``), and ``changes(buffering:)`` is an `AsyncSequence` of each change.
public final class RemotePresence<Info: Decodable & Sendable>: Sendable, Observable {
    /// The channel whose members are mirrored.
    public let channel: Channel
    private weak let client: HeraldClient?
    let queue: DispatchQueue
    private let options: PresenceOptions
    private let mirror = Mutex<Mirror>(Mirror())
    private let registrar = ObservationRegistrar()

    private struct Mirror {
        /// Sorted by client id number (the daemon's order).
        var members: [PresenceMember<Info>] = []
        var count = 0
        var countOnly = false
        /// Grows with every applied change (the ``ValueSource`` revision).
        var revision = 0
        var sync: Sync?
        /// A reason to read the list again came while a read was under way.
        var syncAgain = false
        var syncs = 0
        var nextSync = 0
        /// Callers of `synced()` waiting for the read under way.
        var waiters: [CheckedContinuation<Result<Void, HeraldClientError>, Never>] = []
        var observers: [Int: @Sendable (PresenceState<Info>, Int) -> Void] = [:]
        var streams: [Int: AsyncStream<PresenceChange<Info>>.Continuation] = [:]
        var nextObserver = 0
        var droppedChanges = 0
        var subscription: Subscription?

        var state: PresenceState<Info> { PresenceState(members: countOnly ? [] : members, count: count, isCountOnly: countOnly) }
    }

    /// What a join or leave did: nothing, a change, or it showed the list missed changes.
    private enum ApplyOutcome { case none, changed, resync }
    /// What follows a page: nothing (a newer read took over), another page, or the end.
    private enum NextPage { case stale, page(String?), done }
    /// How a read ended: superseded, or done (with who waited for it and the next read).
    private enum SyncEnd {
        case stale
        case done(waiters: [CheckedContinuation<Result<Void, HeraldClientError>, Never>], again: Int?, changed: Bool)
    }

    /// One read of the member list, page by page.
    private struct Sync {
        let id: Int
        var members: [PresenceMember<Info>] = []
        /// Client numbers up to this one are read (nil: no page yet); events about them apply
        /// to `members`, later ones are left to the pages to come.
        var readUpTo: Int?
    }

    init(channel: Channel, client: HeraldClient, queue: DispatchQueue, options: PresenceOptions) {
        self.channel = channel
        self.client = client
        self.queue = queue
        self.options = options
    }

    /// The members, in the daemon's order (by client id); empty while ``isCountOnly``.
    public var members: [PresenceMember<Info>] {
        registrar.access(self, keyPath: \.members)
        return mirror.withLock { $0.countOnly ? [] : $0.members }
    }

    /// How many members the channel has.
    public var count: Int {
        registrar.access(self, keyPath: \.count)
        return mirror.withLock { $0.count }
    }

    /// True while the channel has more members than ``PresenceOptions/maxListed`` (or the
    /// daemon tells counts only): ``members`` is empty and ``count`` is kept.
    public var isCountOnly: Bool {
        registrar.access(self, keyPath: \.isCountOnly)
        return mirror.withLock { $0.countOnly }
    }

    /// Members, count and mode at once (one lock: they agree).
    public var state: PresenceState<Info> {
        registrar.access(self, keyPath: \.members)
        registrar.access(self, keyPath: \.count)
        return mirror.withLock { $0.state }
    }

    /// How often the member list was read from the daemon (the first read included).
    public var resyncCount: Int { mirror.withLock { $0.syncs } }

    /// Changes lost because a ``changes(buffering:)`` consumer fell behind its buffer.
    public var droppedChanges: Int { mirror.withLock { $0.droppedChanges } }

    /// Calls `handler` with the whole state after every change, and at once when `alertNow`.
    /// - Parameters:
    ///   - alertNow: also call at once (on the queue) with the current state.
    ///   - handler: gets the members, count and mode, on the client's `.ordered` queue.
    /// - Returns: the observation; releasing it or `cancel()` stops the calls. It keeps this
    ///   mirror alive.
    public func observe(alertNow: Bool = true, _ handler: @escaping @Sendable (PresenceState<Info>) -> Void) -> Observation {
        addObserver(alertNow: alertNow) { state, _ in handler(state) }
    }

    private func addObserver(alertNow: Bool, _ handler: @escaping @Sendable (PresenceState<Info>, Int) -> Void) -> Observation {
        let id = mirror.withLock { mirror -> Int in
            let id = mirror.nextObserver
            mirror.nextObserver += 1
            mirror.observers[id] = handler
            if alertNow { schedule(id: id, state: mirror.state, revision: mirror.revision) }
            return id
        }
        return Observation { [self] in _ = mirror.withLock { $0.observers.removeValue(forKey: id) } }
    }

    /// Each change as it is applied: joins, leaves, counts and whole re-reads, for one consumer.
    ///
    ///     for await change in room.changes() {
    ///         if case .joined(let member) = change { greet(member.info?.name) }
    ///     }
    ///
    /// The stream keeps this mirror alive while it is iterated, and finishes when the client
    /// closes. Changes lost to `buffering` are counted in ``droppedChanges``; ``members`` is
    /// right whatever the consumer missed.
    /// - Parameter buffering: what to keep while the consumer lags (default: the newest 256).
    /// - Returns: the stream.
    public func changes(buffering: StreamBuffering = .newest(256)) -> AsyncStream<PresenceChange<Info>> {
        let policy: AsyncStream<PresenceChange<Info>>.Continuation.BufferingPolicy
        switch buffering {
        case .unbounded: policy = .unbounded
        case .newest(let n): policy = .bufferingNewest(max(1, n))
        case .oldest(let n): policy = .bufferingOldest(max(1, n))
        }
        let (stream, continuation) = AsyncStream.makeStream(of: PresenceChange<Info>.self, bufferingPolicy: policy)
        let id = mirror.withLock { mirror -> Int in
            let id = mirror.nextObserver
            mirror.nextObserver += 1
            mirror.streams[id] = continuation
            return id
        }
        // The termination handler holds the mirror: an iterated stream keeps it (and its
        // subscription) alive, as an observation does.
        continuation.onTermination = { [self] _ in _ = mirror.withLock { $0.streams.removeValue(forKey: id) } }
        return stream
    }

    func attach(_ subscription: Subscription) {
        mirror.withLock { $0.subscription = subscription }
    }

    /// Finishes the change streams (the client closed or the subscription ended).
    func finishStreams() {
        let streams = mirror.withLock { mirror -> [AsyncStream<PresenceChange<Info>>.Continuation] in
            defer { mirror.streams = [:] }
            return Array(mirror.streams.values)
        }
        for stream in streams { stream.finish() }
    }

    // MARK: Events

    /// One `$presence.CH` event's data: `{"action":"join"|"leave","client":…}` or
    /// `{"action":"count","count":N}`. Runs on the `.ordered` queue.
    func receive(_ data: RawJSON?) {
        guard let data, let change = PresenceChange<Info>(event: data) else { return }   // also actions of later daemons
        switch change {
        case .joined, .left: apply(change)
        case .count(let count): counted(count)
        case .nodeCount: resync()   // one node's count: the total comes from a read
        case .resynced: break
        }
    }

    /// A join or leave: applied to the list (and to a read under way, for members it read).
    private func apply(_ change: PresenceChange<Info>) {
        let outcome = mirror.withLock { mirror -> ApplyOutcome in
            if var sync = mirror.sync, let upTo = sync.readUpTo, let number = change.member?.number, number <= upTo {
                Self.apply(change, to: &sync.members)
                mirror.sync = sync
            }
            if mirror.countOnly {
                switch change {
                case .joined: mirror.count += 1
                case .left: mirror.count = max(0, mirror.count - 1)
                default: break
                }
                mirror.revision += 1
                let relist = mirror.count <= options.maxListed
                notify(&mirror, .count(mirror.count))
                return relist ? .resync : .none
            }
            guard let applied = Self.apply(change, to: &mirror.members) else {
                // A leave of someone never listed: a change was missed (a connection that took
                // its previous one's place within the grace period keeps no old client id).
                return mirror.sync == nil ? .resync : .none
            }
            mirror.count = mirror.members.count
            mirror.revision += 1
            notify(&mirror, applied)
            return .changed
        }
        switch outcome {
        case .none: break
        case .changed: changedObservably()
        case .resync:
            changedObservably()
            resync()
        }
    }

    /// Applies a join or leave to a sorted member list.
    /// - Returns: the change as applied (a leave carries the member as it was listed); nil when
    ///   a leave named no listed member.
    @discardableResult
    private static func apply(_ change: PresenceChange<Info>, to members: inout [PresenceMember<Info>]) -> PresenceChange<Info>? {
        switch change {
        case .joined(let member):
            if let index = members.firstIndex(where: { $0.client == member.client }) {
                members[index] = member
            } else {
                let key = member.number ?? Int.max
                let index = members.firstIndex(where: { ($0.number ?? Int.max) > key }) ?? members.count
                members.insert(member, at: index)
            }
            return change
        case .left(let member):
            guard let index = members.firstIndex(where: { $0.client == member.client }) else { return nil }
            return .left(members.remove(at: index))
        case .count, .nodeCount, .resynced:
            return change
        }
    }

    /// The daemon told a count instead of each change: the list may have missed changes.
    private func counted(_ count: Int) {
        let relist = mirror.withLock { mirror -> Bool in
            mirror.count = count
            mirror.revision += 1
            if count > options.maxListed, !mirror.countOnly {
                mirror.countOnly = true
                mirror.members = []
            }
            notify(&mirror, .count(count))
            return count <= options.maxListed
        }
        changedObservably()
        if relist { resync() }
    }

    // MARK: Reading the list

    /// Reads the member list again (one read at a time; a request during one reads once more
    /// after it). Called when the `$presence` subscription is confirmed, on a `gap`, and when
    /// the mirror finds it missed changes.
    func resync() {
        let id = mirror.withLock { mirror -> Int? in
            if mirror.sync != nil {
                mirror.syncAgain = true
                return nil
            }
            return Self.startSync(&mirror)
        }
        if let id { requestPage(after: nil, sync: id, countOnly: mirror.withLock { $0.countOnly }) }
    }

    private static func startSync(_ mirror: inout Mirror) -> Int {
        mirror.nextSync += 1
        mirror.syncs += 1
        mirror.syncAgain = false
        mirror.sync = Sync(id: mirror.nextSync)
        return mirror.nextSync
    }

    /// Waits for the read under way (the first one, started when the subscription was confirmed).
    func synced() async throws(HeraldClientError) {
        let result = await withCheckedContinuation { continuation in
            let done = mirror.withLock { mirror -> Bool in
                guard mirror.sync != nil else { return true }
                mirror.waiters.append(continuation)
                return false
            }
            if done { continuation.resume(returning: .success(())) }
        }
        try result.get()
    }

    /// Asks one page; `countOnly` (the mirror lists counts only now): just the count first,
    /// and pages only when it is back within ``PresenceOptions/maxListed``.
    private func requestPage(after: String?, sync id: Int, countOnly: Bool) {
        guard let client else {
            finishSync(id, .failure(.closed))
            return
        }
        let name = channel.name
        let limit = options.pageSize
        client.ask("presence", answerOn: queue, { writer in
            HeraldClient.writePresenceQuery(&writer, channel: name, after: after, limit: limit, countOnly: countOnly)
        }, then: { [weak self] result in
            self?.pageArrived(result, sync: id, countOnly: countOnly)
        })
    }

    /// One `presence` answer, on the `.ordered` queue behind the events that came before it.
    private func pageArrived(_ result: Result<ServerFrame, HeraldClientError>, sync id: Int, countOnly: Bool) {
        let frame: ServerFrame
        switch result {
        case .success(let answer): frame = answer
        case .failure(let error):
            finishSync(id, .failure(error))
            return
        }
        let page = HeraldClient.presencePage(frame, as: Info.self)
        let next = mirror.withLock { mirror -> NextPage in
            guard var sync = mirror.sync, sync.id == id else { return .stale }
            if countOnly, page.count <= options.maxListed { return .page(nil) }
            if countOnly || page.count > options.maxListed {
                // Counts only: no (more) pages.
                sync.readUpTo = nil
                sync.members = []
                mirror.sync = sync
                return .done
            }
            sync.members += page.members
            if let next = page.next, let number = PresenceMember<Info>.number(of: next), !page.members.isEmpty {
                sync.readUpTo = number
                mirror.sync = sync
                return .page(next)
            }
            sync.readUpTo = Int.max
            mirror.sync = sync
            return .done
        }
        switch next {
        case .stale: return
        case .page(let after): requestPage(after: after, sync: id, countOnly: false)
        case .done: finishSync(id, .success(countOnly || page.count > options.maxListed ? page.count : nil))
        }
    }

    /// Ends read `id`: takes its list (or the count only, when `result` holds a count), wakes
    /// the waiters, and starts the read asked for meanwhile. A failed read keeps the mirror as
    /// it was and goes to the waiters, else to the error handler (a lost connection is not
    /// reported: the restore reads again).
    private func finishSync(_ id: Int, _ result: Result<Int?, HeraldClientError>) {
        let outcome = mirror.withLock { mirror -> SyncEnd in
            guard let sync = mirror.sync, sync.id == id else { return .stale }
            mirror.sync = nil
            let waiters = mirror.waiters
            mirror.waiters = []
            var changed = false
            if case .success(let countOnly) = result {
                if let count = countOnly {
                    mirror.countOnly = true
                    mirror.members = []
                    mirror.count = count
                } else {
                    mirror.countOnly = false
                    mirror.members = sync.members
                    mirror.count = sync.members.count
                }
                mirror.revision += 1
                notify(&mirror, .resynced(mirror.state))
                changed = true
            }
            let again = mirror.syncAgain ? Self.startSync(&mirror) : nil
            return .done(waiters: waiters, again: again, changed: changed)
        }
        guard case .done(let waiters, let again, let changed) = outcome else { return }
        if changed { changedObservably() }
        let voided = result.map { _ in () }
        for waiter in waiters { waiter.resume(returning: voided) }
        if case .failure(let error) = result, waiters.isEmpty, !Self.isConnectionLoss(error) { client?.report(error) }
        if let again { requestPage(after: nil, sync: again, countOnly: mirror.withLock { $0.countOnly }) }
    }

    /// Whether a failed read failed because the connection went (the restore reads again).
    private static func isConnectionLoss(_ error: HeraldClientError) -> Bool {
        switch error {
        case .disconnected, .notConnected, .closed, .cancelled: return true
        default: return false
        }
    }

    // MARK: Telling

    /// Queues the observers and feeds the streams (under the mirror lock, so they keep order).
    private func notify(_ mirror: inout Mirror, _ change: PresenceChange<Info>) {
        let state = mirror.state
        for id in mirror.observers.keys.sorted() { schedule(id: id, state: state, revision: mirror.revision) }
        for stream in mirror.streams.values {
            if case .dropped = stream.yield(change) { mirror.droppedChanges += 1 }
        }
    }

    private func schedule(id: Int, state: PresenceState<Info>, revision: Int) {
        queue.async { [self] in
            guard let handler = mirror.withLock({ $0.observers[id] }) else { return }
            handler(state, revision)
        }
    }

    /// Fires observation tracking, outside the mirror lock (its callbacks are user code).
    private func changedObservably() {
        registrar.withMutation(of: self, keyPath: \.members) {}
        registrar.withMutation(of: self, keyPath: \.count) {}
        registrar.withMutation(of: self, keyPath: \.isCountOnly) {}
    }
}

extension RemotePresence: ValueSource {
    /// The state now and its revision (grows with every applied change) (``ValueSource``).
    public var revisionedValue: (value: PresenceState<Info>?, revision: Int) {
        mirror.withLock { ($0.state, $0.revision) }
    }

    /// ``observe(alertNow:_:)`` with alert-now and the revision (``ValueSource``).
    /// - Parameter handler: gets the state and its revision.
    /// - Returns: the observation.
    public func observeRevisions(_ handler: @escaping @Sendable (PresenceState<Info>?, Int) -> Void) -> Observation {
        addObserver(alertNow: true) { state, revision in handler(state, revision) }
    }

    /// The client's `.ordered` queue (``ValueSource``).
    public var observerQueue: DispatchQueue { queue }
}

extension PresenceChange {
    /// The member a join or leave is about.
    var member: PresenceMember<Info>? {
        switch self {
        case .joined(let member), .left(let member): return member
        case .count, .nodeCount, .resynced: return nil
        }
    }
}
