import Dispatch
import Synchronization

/// The latest value and revision of each input of a ``combine`` over any number of sources,
/// type-erased (a parameter pack's element types differ), and a generation that grows with
/// every accepted change. Shared by the input observers; it never refers to the calculated
/// value, so it cannot keep it alive.
final class LatestValues: Sendable {
    struct Snapshot: Sendable {
        var values: [(any Sendable)?]
        var revs: [Int]
        var generation = 0
    }

    /// One input: how to observe it (feeding the snapshot after each accepted change) and how
    /// to seed from its `current`.
    typealias Input = (observe: (@escaping @Sendable (Snapshot?) -> Void) -> Observation, seed: () -> Snapshot?)

    private let state: Mutex<Snapshot>

    /// Slots for `count` inputs, none holding a value yet.
    init(count: Int) {
        state = Mutex(Snapshot(values: Array(repeating: nil, count: count), revs: Array(repeating: -1, count: count)))
    }

    /// Records input `slot`'s change if its revision is newer than the one held.
    /// - Returns: the inputs after the change, or nil when it was stale.
    func record(slot: Int, rev: Int, value: (any Sendable)?) -> Snapshot? {
        state.withLock { snapshot -> Snapshot? in
            guard rev > snapshot.revs[slot] else { return nil }
            snapshot.revs[slot] = rev
            snapshot.values[slot] = value
            snapshot.generation += 1
            return snapshot
        }
    }

    /// The inputs as recorded so far.
    var snapshot: Snapshot { state.withLock { $0 } }

    private struct Missing: Error {}

    /// The values when every one is present, else nil.
    static func allPresent<each T>(_ values: (repeat (each T)?)) -> (repeat each T)? {
        func present<V>(_ value: V?) throws -> V {
            guard let value else { throw Missing() }
            return value
        }
        do {
            return try (repeat present(each values))
        } catch {
            return nil
        }
    }
}

extension ValueSource {
    /// This source as input `slot` of `latest`: how to observe it and how to seed from it.
    func input(_ slot: Int, of latest: LatestValues) -> LatestValues.Input {
        (
            observe: { feed in
                self.observeRevisions { value, revision in
                    feed(latest.record(slot: slot, rev: revision, value: value))
                }
            },
            seed: {
                let now = self.revisionedValue
                return latest.record(slot: slot, rev: now.revision, value: now.value)
            }
        )
    }
}

extension CalculatedValue {
    /// Wires type-erased `inputs` to a new calculated value (see the typed `wire`).
    static func wire(
        queue: DispatchQueue, latest: LatestValues, inputs: [LatestValues.Input],
        compute: @escaping @Sendable ([(any Sendable)?]) -> Value?
    ) -> CalculatedValue<Value> {
        let calculated = CalculatedValue<Value>(queue: queue)
        let feed: @Sendable (LatestValues.Snapshot?) -> Void = { [weak calculated] snapshot in
            guard let calculated, let snapshot else { return }
            calculated.update(compute(snapshot.values), generation: snapshot.generation)
        }
        var observations: [Observation] = []
        for input in inputs {
            observations.append(input.observe(feed))
            feed(input.seed())
        }
        // An input's alert-now call may have recorded its value first, on its queue, and not
        // computed yet: compute here too, so the value is right on return (`update` keeps
        // whichever of the two computations of this generation lands first).
        let last = latest.snapshot
        calculated.update(compute(last.values), generation: last.generation)
        calculated.attach(observations)
        return calculated
    }
}
