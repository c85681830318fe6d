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
            queue: observerQueue, latest: latest,
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

/// A calculated value from any number of sources (at least two), recomputed when any changes.
///
///     let label = combine(theme, user) { theme, user in "\(user.name) (\(theme.mode))" }
///     let line = combine(theme, user, todo, unread) { theme, user, items, count in … }
/// - Parameters:
///   - first: the first input (a remote value, list or calculated value); its queue runs the
///     observers.
///   - second: the second input (inputs may belong to different clients).
///   - rest: more inputs, any number (a parameter pack).
///   - transform: computes the result once every input holds a value; quick and pure, any thread.
/// - Returns: the calculated value; nil until every input holds a value.
public func combine<First: ValueSource, Second: ValueSource, each Rest: ValueSource, Output: Sendable>(
    _ first: First, _ second: Second, _ rest: repeat each Rest,
    transform: @escaping @Sendable (First.Value, Second.Value, repeat (each Rest).Value) -> Output
) -> CalculatedValue<Output> {
    var count = 2
    for _ in repeat (each Rest).self { count += 1 }
    let latest = LatestValues(count: count)
    var inputs = [first.input(0, of: latest), second.input(1, of: latest)]
    var slot = 2
    for source in repeat each rest {
        inputs.append(source.input(slot, of: latest))
        slot += 1
    }
    return CalculatedValue<Output>.wire(queue: first.observerQueue, latest: latest, inputs: inputs) { values in
        var index = 2
        func next<T>(_ type: T.Type) -> T? {
            defer { index += 1 }
            return values[index] as? T
        }
        guard let a = values[0] as? First.Value, let b = values[1] as? Second.Value,
              let others = LatestValues.allPresent((repeat next((each Rest).Value.self))) else { return nil }
        return transform(a, b, repeat each others)
    }
}
