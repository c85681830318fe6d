/// How an event from Redis is to be delivered on this node (docs/cluster.md): to the
/// node's plain subscribers, to one member of each queue group the publish script picked
/// this node for, and, for a `req`, with its reply token.
public struct ClusterRouting: Sendable {
    /// Whether the node's subscriptions outside queue groups get the event (false: the node
    /// got it only for its groups).
    public var plain: Bool
    /// The queue groups (`PATTERN GROUP` entries) this node delivers the event to, one
    /// member each.
    public var groups: [[UInt8]]
    /// A `req`'s reply token (32 hex digits), or nil for a `pub`.
    public var replyToken: [UInt8]?
    /// A `req`'s `timeout_ms`: how long this node remembers who it was delivered to.
    public var requestTimeoutMs: Int

    /// A routing; the default is a plain `pub`.
    public init(plain: Bool = true, groups: [[UInt8]] = [], replyToken: [UInt8]? = nil, requestTimeoutMs: Int = 0) {
        self.plain = plain
        self.groups = groups
        self.replyToken = replyToken
        self.requestTimeoutMs = requestTimeoutMs
    }
}
