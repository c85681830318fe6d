/// Something about authentication the operator should see in the log, queued by the broker
/// (which has no logger) and drained by the server (`Broker.takeAuthEvents()`).
public struct AuthEvent: Sendable, Equatable {
    /// What happened.
    public enum Kind: Sendable, Equatable {
        /// A `hello` carried a wrong token; `failures` in the address's current window.
        case rejected(failures: Int)
        /// That failure blocked the address for `blockMs`.
        case blocked(failures: Int, blockMs: Int)
        /// A `hello` from a blocked address was refused (`too_many_attempts`).
        case refusedWhileBlocked
        /// A `hello` would have taken `user` past its `connections` limit.
        case userConnectionLimit(user: String, limit: Int)
        /// The oldest unauthenticated connection was closed to admit a newer one.
        case evictedUnauthenticated(limit: Int)
        /// An admin closed the connection (`kick`): its client id and user ("" without auth).
        case kicked(by: String, user: String)
    }

    /// What happened.
    public let kind: Kind
    /// The connection's client id, e.g. `c7`.
    public let client: String
    /// The peer address (`Session.peer`), e.g. `127.0.0.1` or `unix`.
    public let peer: String

    /// Creates an event. - Parameters: see the properties.
    public init(_ kind: Kind, client: String, peer: String) {
        self.kind = kind
        self.client = client
        self.peer = peer
    }
}
