/// Where the client's connection stands; observed with `HeraldClient.stateUpdates()`.
public enum ConnectionState: Sendable, Equatable, CustomStringConvertible {
    /// The first connection attempt is under way.
    case connecting
    /// Connected and `hello` answered: calls work; what the client holds is being restored
    /// (subscriptions, values, links, declared channels, locks).
    case connected
    /// Connected, and every subscription, mirrored value, link, declared channel and lock the
    /// client held is back: the daemon answered each restore (or refused it for good, which was
    /// reported to its owner). Follows `.connected` on every connection, the first included.
    case restored
    /// Not connected, and why.
    case disconnected(DisconnectReason)
    /// Trying again after a loss; `attempt` counts from 1.
    case reconnecting(attempt: Int)
    /// Not connected, and the device has no usable network path: the client waits for one
    /// (no attempts, no backoff) and reconnects the moment the path is back.
    case waitingForNetwork
    /// The app called ``HeraldClient/suspend()`` (e.g. its scene went to the background): no
    /// connection until ``HeraldClient/resume()``, which reconnects and catches up with `since`.
    case suspended

    /// Whether calls can be made now (`.connected` or `.restored`).
    public var isConnected: Bool {
        switch self {
        case .connected, .restored: return true
        default: return false
        }
    }

    /// A short text, e.g. `reconnecting(2)`.
    public var description: String {
        switch self {
        case .connecting: return "connecting"
        case .connected: return "connected"
        case .restored: return "restored"
        case .waitingForNetwork: return "waiting for network"
        case .suspended: return "suspended"
        case .disconnected(let reason): return "disconnected(\(reason))"
        case .reconnecting(let attempt): return "reconnecting(\(attempt))"
        }
    }
}

/// Why a connection ended.
public enum DisconnectReason: Sendable, Equatable, CustomStringConvertible {
    /// `close()` was called (or the client was released).
    case closedByClient
    /// The daemon closed the socket (restart, shutdown, too many errors).
    case closedByServer
    /// The daemon sent an error frame before closing (`shutting_down`, `slow_consumer`, …).
    case serverError(code: String)
    /// The daemon was silent for three heartbeat intervals.
    case heartbeatTimeout
    /// Connecting or the socket failed.
    case failure(String)
    /// Not connected yet.
    case notStarted
    /// The daemon refused this client's `hello`: a wrong token (`forbidden`) or none where one
    /// is required (`auth_required`). Trying again with the same configuration cannot
    /// succeed, so the client stops reconnecting after this reason.
    case authRejected(code: String, message: String)

    /// A short text.
    public var description: String {
        switch self {
        case .closedByClient: return "closed by client"
        case .closedByServer: return "closed by server"
        case .serverError(let code): return "server error \(code)"
        case .heartbeatTimeout: return "heartbeat timeout"
        case .failure(let why): return why
        case .notStarted: return "not started"
        case .authRejected(let code, let message): return "hello refused: \(code): \(message)"
        }
    }
}

extension DisconnectReason {
    /// Whether reconnecting is pointless: the daemon refused the credentials themselves.
    var isAuthRejection: Bool {
        if case .authRejected = self { return true }
        return false
    }
}
