/// A weak reference to an object that owns a declared channel or a link
/// (``HeraldClient/declare(_:owner:onError:)``), asked only whether it is alive.
///
/// Why any class may own: the owner is never called or read, only compared with nil, so it
/// needs no `Sendable` conformance. Loading the weak reference makes a strong one for a moment;
/// if the owner's last other reference goes meanwhile, its `deinit` runs on the sweeping
/// thread, which is safe for a nonisolated `deinit` (nothing else can reach the object then).
final class WeakOwner: @unchecked Sendable {
    // @unchecked: the reference is written once, in `init`; weak loads are atomic.
    private weak var object: AnyObject?

    /// Holds `object` weakly.
    init(_ object: AnyObject) {
        self.object = object
    }

    /// Whether the owner still exists.
    var isAlive: Bool { object != nil }
}
