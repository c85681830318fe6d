import Dispatch
import Synchronization

/// A value computed from one or more ``RemoteValue``s, recomputed whenever any of them changes.
///
/// Made by ``RemoteValue/map(_:)`` and ``combine(_:_:_:)`` / ``combine(_:_:_:_:)``. Like a
/// `combineLatest`, it has no value (`current` is nil) until every input holds a value; a
/// deleted input (value nil) makes it nil again until that input is set anew.
///
/// Lifetime: it holds its input observations (and so its inputs); the inputs' observer closures
/// hold it only weakly, so releasing it deallocates it and cancels those observations. An
/// ``Observation`` of it keeps it alive.
///
/// Observers run on the first input's client `.ordered` queue, never under a lock, once per
/// accepted input change (the output type need not be `Equatable`, so equal results are not
/// filtered); a cancelled observation is checked again right before each call.
public final class CalculatedValue<Value: Sendable>: Sendable {
    private let queue: DispatchQueue
    private let state = Mutex<State>(State())

    private struct State {
        var value: Value?
        /// The input generation `value` was computed from; older results are dropped.
        var generation = 0
        var observers: [Int: @Sendable (Value?) -> Void] = [:]
        var nextObserver = 0
        var inputs: [Observation] = []
    }

    init(queue: DispatchQueue) {
        self.queue = queue
    }

    /// The last computed value; nil until every input holds a value (or while one is deleted).
    public var current: Value? {
        state.withLock { $0.value }
    }

    /// Calls `handler` with every recomputed value, and with the current one first when
    /// `alertNow` (so a view can render from one code path).
    /// - Parameters:
    ///   - alertNow: also call at once (on the queue) with the current value.
    ///   - handler: gets the value (nil while some input has none).
    /// - Returns: the observation; releasing it or calling `cancel()` stops the calls. It keeps
    ///   this calculated value (and its inputs) alive.
    public func observe(alertNow: Bool = true, _ handler: @escaping @Sendable (Value?) -> Void) -> Observation {
        let id = state.withLock { state -> Int in
            let id = state.nextObserver
            state.nextObserver += 1
            state.observers[id] = handler
            if alertNow { schedule(id: id, value: state.value) }
            return id
        }
        return Observation { [self] in _ = state.withLock { $0.observers.removeValue(forKey: id) } }
    }

    /// How many observers are registered (tests).
    var observerCount: Int {
        state.withLock { $0.observers.count }
    }

    func attach(_ inputs: [Observation]) {
        state.withLock { $0.inputs = inputs }
    }

    /// A result computed from input generation `generation`: kept only if newer than the one
    /// held, because inputs on different clients' queues may finish their computations out of
    /// order.
    func update(_ value: Value?, generation: Int) {
        state.withLock { state in
            guard generation > state.generation else { return }
            state.value = value
            state.generation = generation
            for id in state.observers.keys.sorted() { schedule(id: id, value: value) }
        }
    }

    /// Queues one observer call (under the lock, so calls keep generation order on the serial
    /// queue); the observer is looked up again when the call runs, so cancelling takes effect.
    private func schedule(id: Int, value: Value?) {
        queue.async { [self] in
            guard let handler = state.withLock({ $0.observers[id] }) else { return }
            handler(value)
        }
    }
}

/// The latest value and rev of each input (up to three), and a generation counter that grows
/// with every accepted change. Shared by the input observers; it never refers to the
/// calculated value, so it cannot keep it alive.
final class LatestInputs<A: Sendable, B: Sendable, C: Sendable>: Sendable {
    struct Snapshot: Sendable {
        var a: A?
        var b: B?
        var c: C?
        var revs: [Int] = [-1, -1, -1]
        var generation = 0
    }

    /// One input: how to observe it (feeding the snapshot after each accepted change) and how
    /// to seed from its `current`.
    typealias Input = (observe: (@escaping @Sendable (Snapshot?) -> Void) -> Observation, seed: () -> Snapshot?)

    private let state: Mutex<Snapshot>

    init(b: B? = nil, c: C? = nil) {
        state = Mutex(Snapshot(b: b, c: c))
    }

    /// Records input `slot`'s change if its rev is newer than the one held.
    /// - Returns: the inputs after the change, or nil when the change was stale (a replay of
    ///   the value already held, e.g. the alert-now call after seeding from `current`).
    func record(slot: Int, rev: Int, _ write: (inout Snapshot) -> Void) -> Snapshot? {
        state.withLock { snapshot -> Snapshot? in
            guard rev > snapshot.revs[slot] else { return nil }
            snapshot.revs[slot] = rev
            write(&snapshot)
            snapshot.generation += 1
            return snapshot
        }
    }
}

extension CalculatedValue {
    /// Wires `inputs` to a new calculated value: each input is observed (alert-now, so the
    /// value is fed even if it changes while wiring) and seeded from its `current` at once, so
    /// the result is meaningful on return.
    static func wire<A, B, C>(
        queue: DispatchQueue,
        compute: @escaping @Sendable (LatestInputs<A, B, C>.Snapshot) -> Value?,
        inputs: [LatestInputs<A, B, C>.Input]
    ) -> CalculatedValue<Value> {
        let calculated = CalculatedValue<Value>(queue: queue)
        let feed: @Sendable (LatestInputs<A, B, C>.Snapshot?) -> Void = { [weak calculated] snapshot in
            guard let calculated, let snapshot else { return }
            // The transform runs outside every lock; `update` drops it if a newer one won.
            calculated.update(compute(snapshot), generation: snapshot.generation)
        }
        var observations: [Observation] = []
        for input in inputs {
            observations.append(input.observe(feed))
            feed(input.seed())
        }
        calculated.attach(observations)
        return calculated
    }
}

extension RemoteValue {
    /// A calculated value following this one through `transform`.
    ///
    ///     let isDark = theme.map { $0.mode == "dark" }
    ///     let watching = isDark.observe { dark in render(dark) }
    /// - Parameter transform: computes the result from a non-nil value; it may run on any
    ///   thread, never under a lock, and should be quick and pure.
    /// - Returns: the calculated value; nil while this value is nil (never set or deleted).
    public func map<Output: Sendable>(_ transform: @escaping @Sendable (Value) -> Output) -> CalculatedValue<Output> {
        let latest = LatestInputs<Value, Void, Void>(b: (), c: ())
        return CalculatedValue<Output>.wire(
            queue: queue,
            compute: { snapshot in snapshot.a.map(transform) },
            inputs: [input(0, of: latest) { $0.a = $1 }]
        )
    }

    /// This value as input `slot` of `latest`: how to observe it and how to seed from it.
    func input<A, B, C>(_ slot: Int, of latest: LatestInputs<A, B, C>, _ write: @escaping @Sendable (inout LatestInputs<A, B, C>.Snapshot, Value?) -> Void) -> LatestInputs<A, B, C>.Input {
        (
            observe: { feed in
                self.observe(alertNow: true) { value, rev in
                    feed(latest.record(slot: slot, rev: rev) { write(&$0, value) })
                }
            },
            seed: {
                let now = self.current
                return latest.record(slot: slot, rev: now.rev) { write(&$0, now.value) }
            }
        )
    }
}

/// A calculated value from two remote values, recomputed when either changes.
///
///     let label = combine(theme, user) { theme, user in "\(user.name) (\(theme.mode))" }
/// - Parameters:
///   - a: the first input; its client's `.ordered` queue runs the observers.
///   - b: the second input (may belong to another client).
///   - transform: computes the result once both hold a value; quick and pure, any thread.
/// - Returns: the calculated value; nil until both inputs hold a value.
public func combine<A: Sendable, B: Sendable, Output: Sendable>(
    _ a: RemoteValue<A>, _ b: RemoteValue<B>, _ transform: @escaping @Sendable (A, B) -> Output
) -> CalculatedValue<Output> {
    let latest = LatestInputs<A, B, Void>(c: ())
    return CalculatedValue<Output>.wire(
        queue: a.queue,
        compute: { snapshot in
            guard let x = snapshot.a, let y = snapshot.b else { return nil }
            return transform(x, y)
        },
        inputs: [
            a.input(0, of: latest) { $0.a = $1 },
            b.input(1, of: latest) { $0.b = $1 },
        ]
    )
}

/// A calculated value from three remote values, recomputed when any changes.
/// - Parameters:
///   - a: the first input; its client's `.ordered` queue runs the observers.
///   - b: the second input.
///   - c: the third input.
///   - transform: computes the result once all three hold a value; quick and pure, any thread.
/// - Returns: the calculated value; nil until every input holds a value.
public func combine<A: Sendable, B: Sendable, C: Sendable, Output: Sendable>(
    _ a: RemoteValue<A>, _ b: RemoteValue<B>, _ c: RemoteValue<C>, _ transform: @escaping @Sendable (A, B, C) -> Output
) -> CalculatedValue<Output> {
    let latest = LatestInputs<A, B, C>()
    return CalculatedValue<Output>.wire(
        queue: a.queue,
        compute: { snapshot in
            guard let x = snapshot.a, let y = snapshot.b, let z = snapshot.c else { return nil }
            return transform(x, y, z)
        },
        inputs: [
            a.input(0, of: latest) { $0.a = $1 },
            b.input(1, of: latest) { $0.b = $1 },
            c.input(2, of: latest) { $0.c = $1 },
        ]
    )
}
