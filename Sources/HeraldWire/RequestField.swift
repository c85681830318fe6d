/// The top-level request fields the daemon understands; every other key is ignored.
///
/// The scanner records, for each of these, where its value sits in the line, so an op
/// handler reads only the fields it needs and `data` is never decoded.
public enum RequestField: Int, CaseIterable, Sendable {
    case op, ch, rid, sub, data, name, echo, once, max, group, args, all, token
    case timeoutMs, to, id, action, tag, parent, value, ifRev, index, remove, insert
    case current, since, handle, subs, limit, after, of, compact, user
    case countOnly, info, instance, client

    /// The key as spelled on the wire.
    public var key: String {
        switch self {
        case .timeoutMs: return "timeout_ms"
        case .ifRev: return "if_rev"
        case .countOnly: return "count_only"
        default: return String(describing: self)
        }
    }
}

/// The JSON type of a scanned value.
public enum JSONKind: UInt8, Sendable {
    case object, array, string, number, `true`, `false`, null

    /// The name used in `bad_field` messages ("expected string, got number").
    public var name: String {
        switch self {
        case .object: return "object"
        case .array: return "array"
        case .string: return "string"
        case .number: return "number"
        case .true, .false: return "boolean"
        case .null: return "null"
        }
    }
}

/// Where one top-level value sits in a request line.
public struct ScannedValue: Equatable, Sendable {
    /// The value's JSON type.
    public var kind: JSONKind
    /// Offset of the value's first byte in the line (the opening quote for strings).
    public var start: Int
    /// Offset one past the value's last byte (past the closing quote for strings).
    public var end: Int
    /// For strings: whether the contents hold a backslash escape (and so must be decoded).
    public var hasEscapes: Bool

    /// Creates a value record.
    public init(kind: JSONKind, start: Int, end: Int, hasEscapes: Bool = false) {
        self.kind = kind
        self.start = start
        self.end = end
        self.hasEscapes = hasEscapes
    }
}
