/// One thing a new connection restores, which the daemon may refuse for a while
/// (`HeraldClient+Restore`).
enum RestoreItem: Sendable {
    /// An instance channel this client declared, by name (`declare`).
    case instanceChannel(String)
    /// A link this client made (`link`).
    case link(LinkRecord)
    /// A lock this client holds (`lock`), by channel or by subscription name.
    case lock(LockRecord)
    /// A subscription or signal handler (`sub`), with the `since` its restore asked.
    case subscription(SubscriptionBinding, since: Int?)

    /// Whether a refusal with `code` may pass, so the restore is tried again: `conflict` for an
    /// instance channel or a link (after a failover the client's previous connection holds it
    /// until the cluster declares that node down), `unavailable` for anything (the node cannot
    /// reach Redis yet). Anything else is final at once.
    func retries(_ code: String) -> Bool {
        switch self {
        case .instanceChannel, .link: return code == "conflict" || code == "unavailable"
        case .lock, .subscription: return code == "unavailable"
        }
    }

    /// Whether the client still wants it restored (the app did not remove, unlink, unlock,
    /// cancel or replace it meanwhile).
    func isWanted(in state: ClientState) -> Bool {
        switch self {
        case .instanceChannel(let name): return state.declared.contains(name)
        case .link(let link): return state.links.contains(link)
        case .lock(let lock): return state.locks.contains(lock)
        case .subscription(let binding, _): return state.subscriptions[binding.name]?.binding === binding
        }
    }

    /// Forgets it after a final refusal.
    /// - Returns: false when it was no longer wanted (nothing to report then).
    func forget(in state: inout ClientState) -> Bool {
        guard isWanted(in: state) else { return false }
        state.ownerErrorHandlers[key] = nil
        switch self {
        case .instanceChannel(let name):
            state.declared.removeAll { $0 == name }
            state.channelOwners[name] = nil
        case .link(let link):
            state.links.removeAll { $0 == link }
            state.linkOwners[link.channel] = nil
        case .lock(let lock): state.locks.removeAll { $0 == lock }
        case .subscription(let binding, _): state.subscriptions[binding.name] = nil
        }
        return true
    }

    /// Who hears of a final refusal: the subscription's own `onError` (for a lock by name, that
    /// subscription's), a declared channel's or link's `onError`; nil: the client's handler.
    func errorHandler(in state: ClientState) -> (@Sendable (HeraldClientError) -> Void)? {
        switch self {
        case .subscription(let binding, _): return binding.onError
        case .lock(let lock): return lock.sub.flatMap { state.subscriptions[$0]?.binding.onError }
        case .instanceChannel, .link: return state.ownerErrorHandlers[key]
        }
    }

    /// The report of a final refusal with `cause`.
    func failure(_ cause: HeraldClientError, in state: ClientState) -> HeraldClientError {
        switch self {
        case .instanceChannel(let name):
            return .restoreFailed(kind: .instanceChannel, channel: name, cause: cause)
        case .link(let link):
            return .restoreFailed(kind: .link(parent: link.parent), channel: link.channel, cause: cause)
        case .lock(let lock):
            let channel = lock.channel ?? lock.sub.flatMap { state.subscriptions[$0]?.channel.name } ?? ""
            return .restoreFailed(kind: .lock(subscription: lock.sub), channel: channel, cause: cause)
        case .subscription(let binding, _):
            let channel = state.subscriptions[binding.name]?.channel.name ?? ""
            return .restoreFailed(kind: .subscription(name: binding.name), channel: channel, cause: cause)
        }
    }
}
