/// Where the client's connection stands; observed with `HeraldClient.stateUpdates()`.
public enum ConnectionState: Sendable, Equatable, CustomStringConvertible {
    /// The first connection attempt is under way.
    case connecting
    /// Connected, `hello` answered, subscriptions restored.
    case connected
    /// Not connected, and why.
    case disconnected(DisconnectReason)
    /// Trying again after a loss; `attempt` counts from 1.
    case reconnecting(attempt: Int)

    /// A short text, e.g. `reconnecting(2)`.
    public var description: String {
        switch self {
        case .connecting: return "connecting"
        case .connected: return "connected"
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
