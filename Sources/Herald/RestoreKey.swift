/// Names one thing a new connection restores, to know when all of them are back
/// (``ConnectionState/restored``): retries of one item keep its key until it settles.
enum RestoreKey: Hashable, Sendable {
    /// A declared instance channel, by name.
    case instanceChannel(String)
    /// A link.
    case link(LinkRecord)
    /// A lock.
    case lock(LockRecord)
    /// A subscription (or signal handler, or mirror), by name.
    case subscription(String)
}

extension RestoreItem {
    /// The key this item is tracked under while it is restored.
    var key: RestoreKey {
        switch self {
        case .instanceChannel(let name): return .instanceChannel(name)
        case .link(let link): return .link(link)
        case .lock(let lock): return .lock(lock)
        case .subscription(let binding, _): return .subscription(binding.name)
        }
    }
}
