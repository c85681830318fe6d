/// A change of a mirrored table, as heard on the interest channel (the message types of
/// `Wire`, each table's own).
enum MirrorChange {
    /// `+NODE V PATTERN` / `-NODE V PATTERN`: a node's interest in a pattern or queue group.
    case interest(node: Int, pattern: [UInt8], added: Bool, version: Int)
    /// A connection's locks taken or released (`ClusterLockMessage`).
    case lock(ClusterLockMessage)
    /// A connection's links set or removed (`ClusterLinkMessage`).
    case link(ClusterLinkMessage)
    /// A connection's signal handlers changed (`ClusterHandlerMessage`).
    case handler(ClusterHandlerMessage)
    /// `ROWNER REASON CH CH…`: instance channels removed in Redis.
    case removal(names: [[UInt8]])

    /// The node that announced it; nil for a removal (Redis's reaper may announce one).
    var node: Int? {
        switch self {
        case .interest(let node, _, _, _): return node
        case .lock(let message): return message.node
        case .link(let message): return message.node
        case .handler(let message): return message.node
        case .removal: return nil
        }
    }
}
