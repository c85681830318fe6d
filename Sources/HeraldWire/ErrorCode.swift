/// The stable error codes of the wire protocol (PROTOCOL.md, section Errors).
///
/// The raw value is the exact string sent in `{"error":CODE,…}` frames; never rename one.
public enum ErrorCode: String, Sendable, CaseIterable {
    case badJSON = "bad_json"
    case lineTooLong = "line_too_long"
    case unknownOp = "unknown_op"
    case missingField = "missing_field"
    case badField = "bad_field"
    case badChannel = "bad_channel"
    case notFound = "not_found"
    case forbidden = "forbidden"
    case authRequired = "auth_required"
    case conflict = "conflict"
    case cycle = "cycle"
    case type = "type"
    case range = "range"
    case limit = "limit"
    case timeout = "timeout"
    case noResponders = "no_responders"
    case slowConsumer = "slow_consumer"
    case tooManyErrors = "too_many_errors"
    case shuttingDown = "shutting_down"
    case tooManyAttempts = "too_many_attempts"
    /// The daemon cannot take the op now (a full data folder): nothing changed, try again later.
    case unavailable = "unavailable"
    /// Cluster mode: the node was declared down while it ran and starts a new incarnation;
    /// the connection closes after this frame, and a client reconnects and restores.
    case nodeReset = "node_reset"
    /// An admin closed the connection (`kick`); it closes after this frame.
    case kicked = "kicked"

    /// Whether this code counts toward `max_errors` (a run of malformed frames closes the connection).
    public var isProtocolError: Bool {
        switch self {
        case .badJSON, .lineTooLong, .unknownOp, .missingField, .badField, .badChannel: return true
        default: return false
        }
    }
}

/// A typed protocol error: a stable wire code plus a message for humans.
public struct HeraldError: Error, Equatable, Sendable {
    /// The wire code.
    public var code: ErrorCode
    /// A human-readable explanation, sent as `message`.
    public var message: String

    /// Creates an error with a code and a message.
    public init(_ code: ErrorCode, _ message: String) {
        self.code = code
        self.message = message
    }
}
