import Dispatch

/// Something a ``CalculatedValue`` can follow: a ``RemoteValue``, a ``RemoteList`` (its
/// whole list) or another ``CalculatedValue``, so calculated values chain.
///
/// Each change carries a revision that only grows (a `RemoteValue`'s `rev`, a list's `rev`, a
/// calculated value's generation), so a calculated value can drop stale or repeated changes
/// that reach it out of order from different clients' queues.
public protocol ValueSource: AnyObject, Sendable {
    /// The value type; a source without a value (never set, deleted, an input missing) gives nil.
    associatedtype Value: Sendable

    /// The value now and its revision.
    var revisionedValue: (value: Value?, revision: Int) { get }

    /// Calls `handler` with the current value and revision at once (on ``observerQueue``),
    /// then with every change.
    /// - Parameter handler: gets the value and its revision.
    /// - Returns: the observation; releasing it stops the calls and may release the source.
    func observeRevisions(_ handler: @escaping @Sendable (Value?, Int) -> Void) -> Observation

    /// The serial queue observers of this source run on.
    var observerQueue: DispatchQueue { get }
}

extension RemoteValue: ValueSource {
    /// The value now and its `rev` (``ValueSource``).
    public var revisionedValue: (value: Value?, revision: Int) {
        let now = current
        return (now.value, now.rev)
    }

    /// ``observe(alertNow:_:)`` with alert-now (``ValueSource``).
    /// - Parameter handler: gets the value and its `rev`.
    /// - Returns: the observation.
    public func observeRevisions(_ handler: @escaping @Sendable (Value?, Int) -> Void) -> Observation {
        observe(alertNow: true, handler)
    }

    /// The client's `.ordered` queue (``ValueSource``).
    public var observerQueue: DispatchQueue { queue }
}

extension RemoteList: ValueSource {
    /// A list source's value: the whole list.
    public typealias Value = [Element]

    /// The list now and its `rev` (``ValueSource``); never nil (an unset list is empty).
    public var revisionedValue: (value: [Element]?, revision: Int) {
        let now = current
        return (now.value, now.rev)
    }

    /// ``observe(alertNow:_:)`` with alert-now (``ValueSource``).
    /// - Parameter handler: gets the list and its `rev`.
    /// - Returns: the observation.
    public func observeRevisions(_ handler: @escaping @Sendable ([Element]?, Int) -> Void) -> Observation {
        observe(alertNow: true) { elements, rev in handler(elements, rev) }
    }

    /// The client's `.ordered` queue (``ValueSource``).
    public var observerQueue: DispatchQueue { queue }
}

extension ValueSource {
    /// A calculated value following this source through `transform`.
    ///
    ///     let isDark = theme.map { $0.mode == "dark" }            // RemoteValue
    ///     let open = todo.map { $0.filter { !$0.done }.count }    // RemoteList: every edit
    ///     let label = open.map { "\($0) open" }                   // CalculatedValue: chains
    /// - Parameter transform: computes the result from a non-nil value; it may run on any
    ///   thread, never under a lock, and should be quick and pure.
    /// - Returns: the calculated value; nil while this source has no value.
    public func map<Output: Sendable>(_ transform: @escaping @Sendable (Value) -> Output) -> CalculatedValue<Output> {
        let latest = LatestInputs<Value, Void, Void>(b: (), c: ())
        return CalculatedValue<Output>.wire(
            queue: observerQueue,
            compute: { snapshot in snapshot.a.map(transform) },
            inputs: [input(0, of: latest) { $0.a = $1 }]
        )
    }

    /// This source as input `slot` of `latest`: how to observe it and how to seed from it.
    func input<A, B, C>(_ slot: Int, of latest: LatestInputs<A, B, C>, _ write: @escaping @Sendable (inout LatestInputs<A, B, C>.Snapshot, Value?) -> Void) -> LatestInputs<A, B, C>.Input {
        (
            observe: { feed in
                self.observeRevisions { value, revision in
                    feed(latest.record(slot: slot, rev: revision) { write(&$0, value) })
                }
            },
            seed: {
                let now = self.revisionedValue
                return latest.record(slot: slot, rev: now.revision) { write(&$0, now.value) }
            }
        )
    }
}

/// A calculated value from two sources, recomputed when either changes.
///
///     let label = combine(theme, user) { theme, user in "\(user.name) (\(theme.mode))" }
/// - Parameters:
///   - a: the first input (a remote value, list or calculated value); its queue runs the observers.
///   - b: the second input (may belong to another client).
///   - transform: computes the result once both hold a value; quick and pure, any thread.
/// - Returns: the calculated value; nil until both inputs hold a value.
public func combine<A: ValueSource, B: ValueSource, Output: Sendable>(
    _ a: A, _ b: B, _ transform: @escaping @Sendable (A.Value, B.Value) -> Output
) -> CalculatedValue<Output> {
    let latest = LatestInputs<A.Value, B.Value, Void>(c: ())
    return CalculatedValue<Output>.wire(
        queue: a.observerQueue,
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

/// A calculated value from three sources, recomputed when any changes.
/// - Parameters:
///   - a: the first input; its queue runs the observers.
///   - b: the second input.
///   - c: the third input.
///   - transform: computes the result once all three hold a value; quick and pure, any thread.
/// - Returns: the calculated value; nil until every input holds a value.
public func combine<A: ValueSource, B: ValueSource, C: ValueSource, Output: Sendable>(
    _ a: A, _ b: B, _ c: C, _ transform: @escaping @Sendable (A.Value, B.Value, C.Value) -> Output
) -> CalculatedValue<Output> {
    let latest = LatestInputs<A.Value, B.Value, C.Value>()
    return CalculatedValue<Output>.wire(
        queue: a.observerQueue,
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
