import Dispatch
import Observation

/// A value source (a ``RemoteValue``, a ``RemoteList``'s elements, a ``CalculatedValue``)
/// mirrored on the main actor: ``value`` is read and changed only there, so Observation
/// (`withObservationTracking`, SwiftUI) sees changes on the main actor, after `value` holds them.
///
/// Made by ``ValueSource/onMainActor()``. It follows the source while it lives (it holds the
/// source's observation; releasing it cancels that) and applies changes in revision order,
/// dropping any that arrive late with an older revision.
@MainActor
public final class MainActorValue<Value: Sendable>: Observable {
    private var storedValue: Value?
    private var storedRevision: Int
    private var observation: Observation?
    private let registrar = ObservationRegistrar()
    private let source: AnyObject

    init<Source: ValueSource>(_ source: Source) where Source.Value == Value {
        self.source = source
        let now = source.revisionedValue
        storedValue = now.value
        storedRevision = now.revision
        observation = source.observeRevisions { [weak self] value, revision in
            DispatchQueue.main.async {
                MainActor.assumeIsolated { self?.apply(value, revision: revision) }
            }
        }
    }

    /// The source's value now (nil while it has none), as last applied on the main actor.
    public var value: Value? {
        registrar.access(self, keyPath: \.value)
        return storedValue
    }

    /// The revision of ``value`` (a `rev`, or a calculated value's generation).
    public var revision: Int {
        registrar.access(self, keyPath: \.revision)
        return storedRevision
    }

    /// Stops following the source; ``value`` keeps its last state.
    public func cancel() {
        observation?.cancel()
        observation = nil
    }

    private func apply(_ value: Value?, revision: Int) {
        guard observation != nil, revision >= storedRevision else { return }
        registrar.withMutation(of: self, keyPath: \.value) {
            registrar.withMutation(of: self, keyPath: \.revision) {
                storedValue = value
                storedRevision = revision
            }
        }
    }
}
