import Dispatch
import Observation
import Synchronization

/// A local mirror of one channel's retained list, kept exact by the daemon's list events.
///
/// Made by ``HeraldClient/remoteList(_:at:)``, which returns once the mirror holds the list.
/// It starts from `current` (and a `get` barrier), then applies `set`, `del`, `index` and
/// `splice` events whose `rev` is exactly the next one. A `rev` further ahead means a change
/// was missed (a lock suppressed it, or a reconnect lost it): the mirror fetches the list
/// again with `get` (one fetch at a time) and takes it when it is newer; so does a `gap` (the
/// daemon says events on the channel will never arrive). Older revs are ignored.
///
/// Observers run on the client's `.ordered` queue, in `rev` order, never under a lock.
///
/// It is `Observable`: reading ``current`` inside `withObservationTracking` registers it, and
/// every applied change fires it (on the thread that applied it, after `current` holds it).
public final class RemoteList<Element: Codable & Sendable>: Sendable, Observable {
    /// The channel mirrored.
    public let channel: Channel
    private weak let client: HeraldClient?
    let queue: DispatchQueue
    private let mirror = Mutex<Mirror>(Mirror())
    private let registrar = ObservationRegistrar()

    private struct Mirror {
        var elements: [Element] = []
        var rev = 0
        var resyncing = false
        /// A `gap` came while a fetch was under way: fetch once more after it.
        var fetchAgain = false
        var resyncs = 0
        var observers: [Int: @Sendable ([Element], Int) -> Void] = [:]
        /// Per-index observers: the index watched and the handler.
        var indexObservers: [Int: (index: Int, handler: @Sendable (Element?, Int) -> Void)] = [:]
        var changeObservers: [Int: @Sendable ([Element], ListChange, Int) -> Void] = [:]
        var nextObserver = 0
        var subscription: Subscription?
    }

    /// The client, for writes (held weakly, like subscription tokens).
    var owner: HeraldClient? { client }

    init(channel: Channel, client: HeraldClient, queue: DispatchQueue) {
        self.channel = channel
        self.client = client
        self.queue = queue
    }

    /// The last known list and its `rev` (an unset or deleted channel: empty).
    public var current: Retained<[Element]> {
        registrar.access(self, keyPath: \.current)
        return mirror.withLock { Retained(value: $0.elements, rev: $0.rev) }
    }

    /// How often the mirror had to fetch the whole list after missing a change (a rev further
    /// ahead than the next, or a `gap`).
    public var resyncCount: Int { mirror.withLock { $0.resyncs } }

    /// Calls `handler` with the whole list after every change, and at once when `alertNow`.
    /// - Parameters:
    ///   - alertNow: also call at once (on the queue) with the current list.
    ///   - handler: gets the list and its rev.
    /// - Returns: the observation; releasing it or `cancel()` stops the calls.
    public func observe(alertNow: Bool = true, _ handler: @escaping @Sendable ([Element], Int) -> Void) -> Observation {
        let id = mirror.withLock { mirror -> Int in
            let id = mirror.nextObserver
            mirror.nextObserver += 1
            mirror.observers[id] = handler
            if alertNow { schedule(id: id, elements: mirror.elements, rev: mirror.rev) }
            return id
        }
        return Observation { [self] in _ = mirror.withLock { $0.observers.removeValue(forKey: id) } }
    }

    /// Calls `handler` with the element at `index` whenever a change may have touched it: an
    /// `assign` or `append` at that index, a splice that replaces it or shifts it, and every
    /// whole-list change (`set`, `del`, a resync). Elements need not be `Equatable`, so a
    /// whole-list change calls it even when that element stayed the same.
    /// - Parameters:
    ///   - index: the position watched (0-based).
    ///   - alertNow: also call at once (on the queue) with the element there now.
    ///   - handler: gets the element (nil while the list is shorter) and the list's rev.
    /// - Returns: the observation; releasing it or `cancel()` stops the calls.
    public func observe(index: Int, alertNow: Bool = true, _ handler: @escaping @Sendable (Element?, Int) -> Void) -> Observation {
        let id = mirror.withLock { mirror -> Int in
            let id = mirror.nextObserver
            mirror.nextObserver += 1
            mirror.indexObservers[id] = (index, handler)
            if alertNow { scheduleIndex(id: id, element: Self.element(mirror.elements, index), rev: mirror.rev) }
            return id
        }
        return Observation { [self] in _ = mirror.withLock { $0.indexObservers.removeValue(forKey: id) } }
    }

    /// Calls `handler` with every accepted change: the list after it, what changed
    /// (``ListChange``: one position, a splice, the whole list, or a `touch`) and the rev.
    ///
    ///     let watching = todo.observeChanges { items, change, rev in
    ///         switch change {
    ///         case .index(let row): reloadRow(row)
    ///         case .structural(let range, let inserted): replaceRows(range, with: inserted)
    ///         case .whole, .touched: reloadAll()
    ///         }
    ///     }
    /// - Parameters:
    ///   - alertNow: also call at once with the current list and `.whole`.
    ///   - handler: gets the elements, the change and the rev, on the client's `.ordered` queue.
    /// - Returns: the observation; releasing it or `cancel()` stops the calls.
    public func observeChanges(alertNow: Bool = true, _ handler: @escaping @Sendable ([Element], ListChange, Int) -> Void) -> Observation {
        let id = mirror.withLock { mirror -> Int in
            let id = mirror.nextObserver
            mirror.nextObserver += 1
            mirror.changeObservers[id] = handler
            if alertNow { scheduleChange(id: id, elements: mirror.elements, change: .whole, rev: mirror.rev) }
            return id
        }
        return Observation { [self] in _ = mirror.withLock { $0.changeObservers.removeValue(forKey: id) } }
    }

    /// How many observers are registered (tests: calculated values cancel theirs).
    var observerCount: Int {
        mirror.withLock { $0.observers.count + $0.indexObservers.count + $0.changeObservers.count }
    }

    func attach(_ subscription: Subscription) {
        mirror.withLock { $0.subscription = subscription }
    }

    /// One state event for the channel.
    func receive(_ data: RawJSON?, metadata: EventMetadata) {
        guard let rev = metadata.rev else { return }   // a plain `pub`: not state
        do throws(HeraldClientError) {
            switch metadata.kind {
            case "del":
                replace(with: [], rev: rev)
            case "index":
                let element = try (data ?? .null).decode(as: Element.self)
                change(rev: rev, kind: .index(metadata.index ?? 0), touches: { $0 == metadata.index }) { elements in
                    guard let index = metadata.index, index >= 0, index <= elements.count else { return false }
                    if index == elements.count { elements.append(element) } else { elements[index] = element }
                    return true
                }
            case "splice":
                let inserted = try (metadata.insert ?? RawJSON("[]")).decode(as: [Element].self)
                let remove = metadata.remove ?? 0
                let start = metadata.index ?? 0
                // Same length in and out: only the replaced range; else everything after shifts.
                let sameLength = remove == inserted.count
                change(rev: rev, kind: .structural(start..<(start + max(0, remove)), inserted: inserted.count),
                       touches: { i in sameLength ? (i >= start && i < start + remove) : i >= start }) { elements in
                    guard let index = metadata.index, index >= 0, remove >= 0, index <= elements.count,
                          remove <= elements.count - index else { return false }
                    elements.replaceSubrange(index..<(index + remove), with: inserted)
                    return true
                }
            case "touch":
                touched(rev: rev)   // the same list at the same rev: observers hear it again
            default:   // set, current, a get answer: the whole list
                replace(with: try (data ?? RawJSON("[]")).decode(as: [Element].self), rev: rev)
            }
        } catch {
            client?.report(.decoding(type: "[\(Element.self)]", channel: channel.name, message: "\(error)"))
        }
    }

    /// Takes a whole list when it is newer than the mirror.
    func replace(with elements: [Element], rev: Int) {
        let changed = mirror.withLock { mirror -> Bool in
            guard rev > mirror.rev else { return false }
            mirror.elements = elements
            mirror.rev = rev
            notifyAll(mirror, change: .whole)
            return true
        }
        if changed { changedObservably() }
    }

    /// Fires observation tracking, outside the mirror lock (its callbacks are user code).
    private func changedObservably() {
        registrar.withMutation(of: self, keyPath: \.current) {}
    }

    /// Applies an incremental change when it is the next rev; fetches again on a gap or when
    /// the change does not fit the mirror.
    /// A `touch`: at the mirror's rev, every observer is called again with the unchanged list
    /// (as SwiftBinding's `alertChangeListeners`); past it, a change was missed: fetch.
    private func touched(rev: Int) {
        let resync = mirror.withLock { mirror -> Bool in
            if rev == mirror.rev {
                notifyAll(mirror, change: .touched)
                return false
            }
            guard rev > mirror.rev, !mirror.resyncing else { return false }
            mirror.resyncing = true
            mirror.resyncs += 1
            return true
        }
        if resync { Task { await self.resync() } }
    }

    private func change(rev: Int, kind: ListChange, touches: (Int) -> Bool, _ apply: (inout [Element]) -> Bool) {
        let outcome = mirror.withLock { mirror -> ListChangeOutcome in
            guard rev > mirror.rev else { return .none }
            if rev == mirror.rev + 1, apply(&mirror.elements) {
                mirror.rev = rev
                notifyAll(mirror, change: kind, touching: touches)
                return .applied
            }
            guard !mirror.resyncing else { return .none }
            mirror.resyncing = true
            mirror.resyncs += 1
            return .resync
        }
        switch outcome {
        case .none: break
        case .applied: changedObservably()
        case .resync: Task { await self.resync() }
        }
    }

    /// Fetches the list again after the daemon said changes were lost (`gap`); one more fetch
    /// follows a fetch already under way, whose answer may predate the lost changes.
    func refetch() {
        let start = mirror.withLock { mirror -> Bool in
            guard !mirror.resyncing else {
                if !mirror.fetchAgain { mirror.resyncs += 1 }
                mirror.fetchAgain = true
                return false
            }
            mirror.resyncing = true
            mirror.resyncs += 1
            return true
        }
        if start { Task { await self.resync() } }
    }

    private func resync() async {
        repeat {
            await fetch()
        } while mirror.withLock { mirror -> Bool in
            defer { mirror.fetchAgain = false }
            mirror.resyncing = mirror.fetchAgain
            return mirror.fetchAgain
        }
    }

    /// One `get` of the whole list, taken when newer.
    private func fetch() async {
        guard let client else { return }
        do {
            let snapshot = try await client.get(rawAt: channel)
            if snapshot.value == nil || snapshot.value == .null {
                replace(with: [], rev: snapshot.rev)
            } else {
                replace(with: try (snapshot.value ?? RawJSON("[]")).decode(as: [Element].self), rev: snapshot.rev)
            }
        } catch {
            // The next change will notice the gap again and retry.
            client.report(error)
        }
    }

    /// Queues the whole-list observers, and the per-index observers whose index `touching`
    /// says the change may have affected (all of them for a whole-list change).
    private func notifyAll(_ mirror: Mirror, change: ListChange, touching: (Int) -> Bool = { _ in true }) {
        for id in mirror.observers.keys.sorted() { schedule(id: id, elements: mirror.elements, rev: mirror.rev) }
        for id in mirror.changeObservers.keys.sorted() { scheduleChange(id: id, elements: mirror.elements, change: change, rev: mirror.rev) }
        for id in mirror.indexObservers.keys.sorted() {
            guard let watched = mirror.indexObservers[id]?.index, touching(watched) else { continue }
            scheduleIndex(id: id, element: Self.element(mirror.elements, watched), rev: mirror.rev)
        }
    }

    private static func element(_ elements: [Element], _ index: Int) -> Element? {
        index >= 0 && index < elements.count ? elements[index] : nil
    }

    private func scheduleIndex(id: Int, element: Element?, rev: Int) {
        queue.async { [self] in
            guard let handler = mirror.withLock({ $0.indexObservers[id]?.handler }) else { return }
            handler(element, rev)
        }
    }

    private func scheduleChange(id: Int, elements: [Element], change: ListChange, rev: Int) {
        queue.async { [self] in
            guard let handler = mirror.withLock({ $0.changeObservers[id] }) else { return }
            handler(elements, change, rev)
        }
    }

    private func schedule(id: Int, elements: [Element], rev: Int) {
        queue.async { [self] in
            guard let handler = mirror.withLock({ $0.observers[id] }) else { return }
            handler(elements, rev)
        }
    }
}

extension HeraldClient {
    /// Mirrors a channel's retained list; returns once the mirror holds the current list.
    ///
    ///     let todo = try await client.remoteList(String.self, at: Channel("app", "todo"))
    ///     let watching = todo.observe { items, rev in render(items) }
    /// - Parameters:
    ///   - type: the element type.
    ///   - channel: a concrete channel.
    /// - Returns: the mirror; releasing it unsubscribes.
    /// - Throws: `.badChannel`, `.decoding`, `.notConnected`, `.closed`, the daemon's refusals.
    public func remoteList<Element: Codable & Sendable>(_ type: Element.Type, at channel: Channel) async throws(HeraldClientError) -> RemoteList<Element> {
        _ = try channel.validatedConcrete()
        let remote = RemoteList<Element>(channel: channel, client: self, queue: orderedQueue)
        let options = SubscriptionOptions(delivery: .ordered, current: true, onGap: { [weak remote] _ in remote?.refetch() })
        let token = try subscribe(raw: channel, options: options) { [weak remote] data, metadata in
            remote?.receive(data, metadata: metadata)
        }
        remote.attach(token)
        try await token.ready()
        let snapshot = try await get(rawAt: channel)
        if snapshot.rev > 0 {
            let value = snapshot.value ?? .null
            remote.replace(with: value == .null ? [] : try value.decode(as: [Element].self), rev: snapshot.rev)
        }
        return remote
    }
}

/// What one incremental list change did to the mirror.
private enum ListChangeOutcome {
    case none, applied, resync
}
