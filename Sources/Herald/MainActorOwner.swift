import Synchronization

/// A weak reference to a `@MainActor` owner that other threads may ask about without touching it.
///
/// Why not a plain `weak` capture: loading a weak reference makes a strong one for a moment,
/// and if the main actor drops its last reference meanwhile, the owner's `deinit` would run on
/// the client's I/O thread. So the owner is read on the main actor only; other threads read
/// `isGone`, which the main actor sets when it finds the owner released.
final class MainActorOwner<Owner: AnyObject>: @unchecked Sendable {
    // @unchecked: `owner` is main-actor isolated; `gone` is atomic.
    @MainActor private weak var owner: Owner?
    private let gone = Atomic<Bool>(false)

    /// Wraps the owner (on the main actor, where it lives).
    /// - Parameter owner: held weakly.
    @MainActor init(_ owner: Owner) {
        self.owner = owner
    }

    /// The owner, or nil (and `isGone` from now on) once it was released.
    @MainActor var current: Owner? {
        guard let owner else {
            gone.store(true, ordering: .releasing)
            return nil
        }
        return owner
    }

    /// Whether the main actor found the owner released; any thread.
    var isGone: Bool { gone.load(ordering: .acquiring) }
}
