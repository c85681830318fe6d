/// A Redis reply as the broker sees it (cluster mode): the engine converts hiredis's
/// replies into this, so the broker stays free of Redis and testable with a fake engine.
public indirect enum ClusterValue: Sendable, Equatable {
    /// An integer reply.
    case int(Int)
    /// A bulk string (or status) reply.
    case bytes([UInt8])
    /// An array reply (a script's table).
    case array([ClusterValue])
    /// A nil reply.
    case null
    /// An error reply, or Redis was not reachable: the text says which.
    case failure(String)

    /// The integer, when this is one (a numeric bulk string counts too).
    public var int: Int? {
        switch self {
        case .int(let value): return value
        case .bytes(let bytes): return Int(String(decoding: bytes, as: UTF8.self))
        default: return nil
        }
    }

    /// The bytes, when this is a bulk string.
    public var bytes: [UInt8]? {
        if case .bytes(let value) = self { return value }
        return nil
    }

    /// The elements, when this is an array.
    public var elements: [ClusterValue]? {
        if case .array(let value) = self { return value }
        return nil
    }
}
