/// What a restore after a reconnect was about, in ``HeraldClientError/restoreFailed(kind:channel:cause:)``.
public enum RestoreKind: Sendable, Equatable, CustomStringConvertible {
    /// An instance channel this client declared (`declare`).
    case instanceChannel
    /// A link of the channel to `parent` (`link`).
    case link(parent: String)
    /// A lock; `subscription` names this client's subscription for a lock by name, nil for a
    /// lock by channel or pattern.
    case lock(subscription: String?)
    /// A subscription or signal handler, by name.
    case subscription(name: String)

    /// A short text, e.g. `link to ui.home`.
    public var description: String {
        switch self {
        case .instanceChannel: return "instance channel"
        case .link(let parent): return "link to \(parent)"
        case .lock(let subscription): return subscription.map { "lock on subscription \($0)" } ?? "lock"
        case .subscription(let name): return "subscription \(name)"
        }
    }

    /// The thing restored on `channel`, for messages: `link ui.editor -> ui.home`.
    func naming(_ channel: String) -> String {
        switch self {
        case .instanceChannel: return "instance channel \(channel)"
        case .link(let parent): return "link \(channel) -> \(parent)"
        case .lock(let subscription): return subscription.map { "lock on subscription \($0)" } ?? "lock on \(channel)"
        case .subscription(let name): return "subscription \(name) on \(channel)"
        }
    }
}
