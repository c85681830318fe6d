import Dispatch
import Observation
import Synchronization

/// A value computed from one or more sources (``RemoteValue``, ``RemoteList`` or another
/// `CalculatedValue`: see ``ValueSource``), recomputed whenever any of them changes.
///
/// Made by ``ValueSource/map(_:)`` and ``combine(_:_:_:transform:)``. Like a
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
///
/// It is `Observable`: reading ``current`` inside `withObservationTracking` (or a SwiftUI-style
/// view) registers it, and each recomputation fires the change (on the thread that delivered
/// the input change, after `current` already holds the new value).
public final class CalculatedValue<Value: Sendable>: Sendable, Observable {
    private let queue: DispatchQueue
    private let state = Mutex<State>(State())
    private let registrar = ObservationRegistrar()

    private struct State {
        var value: Value?
        /// The input generation `value` was computed from; older results are dropped.
        var generation = 0
        var observers: [Int: @Sendable (Value?, Int) -> Void] = [:]
        var nextObserver = 0
        var inputs: [Observation] = []
    }

    init(queue: DispatchQueue) {
        self.queue = queue
    }

    /// The last computed value; nil until every input holds a value (or while one is deleted).
    public var current: Value? {
        registrar.access(self, keyPath: \.current)
        return state.withLock { $0.value }
    }

    /// Calls `handler` with every recomputed value, and with the current one first when
    /// `alertNow` (so a view can render from one code path).
    /// - Parameters:
    ///   - alertNow: also call at once (on the queue) with the current value.
    ///   - handler: gets the value (nil while some input has none).
    /// - Returns: the observation; releasing it or calling `cancel()` stops the calls. It keeps
    ///   this calculated value (and its inputs) alive.
    public func observe(alertNow: Bool = true, _ handler: @escaping @Sendable (Value?) -> Void) -> Observation {
        addObserver(alertNow: alertNow) { value, _ in handler(value) }
    }

    private func addObserver(alertNow: Bool, _ handler: @escaping @Sendable (Value?, Int) -> Void) -> Observation {
        let id = state.withLock { state -> Int in
            let id = state.nextObserver
            state.nextObserver += 1
            state.observers[id] = handler
            if alertNow { schedule(id: id, value: state.value, generation: state.generation) }
            return id
        }
        return Observation { [self] in _ = state.withLock { $0.observers.removeValue(forKey: id) } }
    }

    /// The value and the generation it was computed from (``ValueSource``).
    public var revisionedValue: (value: Value?, revision: Int) {
        state.withLock { ($0.value, $0.generation) }
    }

    /// ``observe(alertNow:_:)`` with alert-now and the generation as revision (``ValueSource``).
    /// - Parameter handler: gets the value and its generation.
    /// - Returns: the observation; it keeps this calculated value alive.
    public func observeRevisions(_ handler: @escaping @Sendable (Value?, Int) -> Void) -> Observation {
        addObserver(alertNow: true, handler)
    }

    /// The queue observers run on (``ValueSource``).
    public var observerQueue: DispatchQueue { queue }

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
        let changed = state.withLock { state -> Bool in
            guard generation > state.generation else { return false }
            state.value = value
            state.generation = generation
            for id in state.observers.keys.sorted() { schedule(id: id, value: value, generation: generation) }
            return true
        }
        // Outside the lock: observation-tracking callbacks are user code.
        if changed { registrar.withMutation(of: self, keyPath: \.current) {} }
    }

    /// Queues one observer call (under the lock, so calls keep generation order on the serial
    /// queue); the observer is looked up again when the call runs, so cancelling takes effect.
    private func schedule(id: Int, value: Value?, generation: Int) {
        queue.async { [self] in
            guard let handler = state.withLock({ $0.observers[id] }) else { return }
            handler(value, generation)
        }
    }
}

/// The latest value and rev of the input of a `map` (typed; `combine` uses `LatestValues`), and a generation counter that grows
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
    /// The inputs as recorded so far.
    var snapshot: Snapshot { state.withLock { $0 } }

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

extension CalculatedValue: ValueSource {
    /// Wires `inputs` to a new calculated value: each input is observed (alert-now, so the
    /// value is fed even if it changes while wiring) and seeded from its `current` at once, so
    /// the result is meaningful on return.
    static func wire<A, B, C>(
        queue: DispatchQueue, latest: LatestInputs<A, B, C>,
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
        // As in the type-erased `wire`: the alert-now call may have recorded first, on its queue.
        feed(latest.snapshot)
        calculated.attach(observations)
        return calculated
    }
}
