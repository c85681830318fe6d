/// Why a subscription ended: the last thing it reports, exactly once.
///
/// Why a value and not only an error: an instance channel being removed is a normal part of
/// its life (the car left, the document closed), so it surfaces on the subscription itself
/// (``SubscriptionOptions/onEnd``, ``Subscription/ended()``, a finished ``EventStream``)
/// rather than as a failure in the error handler.
public enum SubscriptionEnd: Sendable, Equatable, CustomStringConvertible {
    /// The instance channel was removed by its owner (or the owner went away); the daemon
    /// dropped the subscription and said `{"removed":CH,"sub":NAME}`.
    case removed(channel: String)
    /// The user's permissions no longer allow this subscription: the daemon's configuration
    /// was reloaded and it said `{"removed":PATTERN,"sub":NAME,"reason":"forbidden"}`. It is not
    /// restored after a reconnect.
    case forbidden(pattern: String)
    /// `max` (or `once`) deliveries were made.
    case finished
    /// Cancelled by the app: `cancel()`, the token or stream released, the weak owner gone,
    /// or a new subscription bound under the same name.
    case cancelled
    /// The daemon refused the `sub` (on first subscribe or when restoring after a reconnect).
    case refused(HeraldClientError)
    /// The client was closed or released.
    case clientClosed

    /// A one-line human description.
    public var description: String {
        switch self {
        case .removed(let channel): return "channel \(channel) removed"
        case .forbidden(let pattern): return "\(pattern) no longer allowed"
        case .finished: return "max deliveries reached"
        case .cancelled: return "cancelled"
        case .refused(let error): return "refused: \(error)"
        case .clientClosed: return "client closed"
        }
    }
}
