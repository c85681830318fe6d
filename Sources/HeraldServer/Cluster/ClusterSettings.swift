/// The `cluster` section: this node's place in a cluster of heraldd nodes over Redis
/// (docs/cluster.md).
///
///     cluster: { redis: "redis://127.0.0.1:6379", node: "a", key_prefix: "herald:", node_timeout_ms: 5000 }
///     cluster: { sentinel: { master: "herald", addresses: ["127.0.0.1:26379"] }, node: "a", wait_replicas: 1 }
///     cluster: { redis: "redis://10.0.0.10:6379", node: "b", max_outstanding_ops: 4096, max_outstanding_bytes: 8388608 }
///
/// Absent, heraldd runs alone and none of the cluster code runs.
public struct ClusterSettings: Equatable, Sendable {
    /// Redis's host (with `sentinel`: the primary's, once a sentinel named it).
    public var redisHost: String
    /// Redis's port (with `sentinel`: the primary's, once a sentinel named it).
    public var redisPort: Int
    /// Where to ask for the primary, when Redis runs under Sentinel (then `redisHost` and
    /// `redisPort` are only the last answer).
    public var sentinel: SentinelSettings?
    /// How many replicas must confirm a retained-state write (`WAIT`) before its client
    /// gets the answer; 0 answers when the primary ran it.
    public var waitReplicas = 0
    /// How long `WAIT` waits for `waitReplicas` replicas before the write is answered
    /// `unavailable`.
    public var waitTimeoutMs = ClusterSettings.defaultWaitTimeoutMs
    /// This node's name, unique in the cluster (in `info`, `stats`, `$sys` events).
    public var node: String
    /// Prefix of every Redis key and channel the cluster uses, so clusters can share a Redis.
    public var keyPrefix: String
    /// How long a node may go without refreshing its liveness key before the others declare
    /// it down (`$sys.node.down`, its interest and queue-group slots removed).
    public var nodeTimeoutMs: Int = ClusterSettings.defaultNodeTimeoutMs
    /// How many commands this node may have sent on its command link without an answer from
    /// Redis before it stops reading the connections that queue cluster work (backpressure,
    /// docs/cluster.md); they are read again once the count fell to half.
    public var maxOutstandingOps = ClusterSettings.defaultMaxOutstandingOps
    /// The same bound in bytes of those commands (and of events queued for them); with
    /// `maxOutstandingOps`, it bounds how long anything waits behind a flood on the link.
    public var maxOutstandingBytes = ClusterSettings.defaultMaxOutstandingBytes

    /// The default `node_timeout_ms`.
    public static let defaultNodeTimeoutMs = 5_000
    /// The accepted range of `node_timeout_ms`.
    public static let nodeTimeoutRange = 1_000...600_000

    /// The default `max_outstanding_ops`.
    public static let defaultMaxOutstandingOps = 4_096
    /// The accepted range of `max_outstanding_ops`.
    public static let maxOutstandingOpsRange = 16...1_048_576
    /// The default `max_outstanding_bytes` (8 MiB).
    public static let defaultMaxOutstandingBytes = 8 * 1_048_576
    /// The accepted range of `max_outstanding_bytes` (64 KiB to 1 GiB).
    public static let maxOutstandingBytesRange = 65_536...1_073_741_824

    /// The default `wait_timeout_ms`.
    public static let defaultWaitTimeoutMs = 1_000
    /// The accepted range of `wait_timeout_ms`.
    public static let waitTimeoutRange = 10...60_000
    /// The accepted range of `wait_replicas`.
    public static let waitReplicasRange = 0...64

    /// The default prefix.
    public static let defaultKeyPrefix = "herald:"

    /// Creates settings; `redis` is `redis://host:port` (port 6379 when left out).
    public init(redis: String, node: String, keyPrefix: String = ClusterSettings.defaultKeyPrefix,
                nodeTimeoutMs: Int = ClusterSettings.defaultNodeTimeoutMs) throws(ClusterURLError) {
        (redisHost, redisPort) = try Self.parse(redis)
        self.node = node
        self.keyPrefix = keyPrefix
        self.nodeTimeoutMs = nodeTimeoutMs
    }

    /// Creates settings that find the primary through Sentinel (`redisHost` and `redisPort`
    /// stay empty until `ClusterJoin` asked).
    public init(sentinel: SentinelSettings, node: String, keyPrefix: String = ClusterSettings.defaultKeyPrefix,
                nodeTimeoutMs: Int = ClusterSettings.defaultNodeTimeoutMs) {
        redisHost = ""
        redisPort = 0
        self.sentinel = sentinel
        self.node = node
        self.keyPrefix = keyPrefix
        self.nodeTimeoutMs = nodeTimeoutMs
    }

    /// Redis's address as last known.
    var redisAddress: RedisAddress { RedisAddress(host: redisHost, port: redisPort) }

    /// Splits `redis://host:port`; IPv6 hosts go in brackets (`redis://[::1]:6379`).
    static func parse(_ url: String) throws(ClusterURLError) -> (String, Int) {
        let scheme = "redis://"
        guard url.hasPrefix(scheme) else { throw ClusterURLError("expected redis://host:port, found \"\(url)\"") }
        var rest = Substring(url.dropFirst(scheme.count))
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        guard !rest.contains("/"), !rest.contains("@") else {
            throw ClusterURLError("expected redis://host:port (no path, no password yet), found \"\(url)\"")
        }
        let host: Substring
        var portText: Substring?
        if rest.hasPrefix("["), let close = rest.firstIndex(of: "]") {
            host = rest[rest.index(after: rest.startIndex)..<close]
            let after = rest[rest.index(after: close)...]
            if after.hasPrefix(":") { portText = after.dropFirst() } else if !after.isEmpty {
                throw ClusterURLError("unexpected \"\(after)\" after the host in \"\(url)\"")
            }
        } else if let colon = rest.lastIndex(of: ":") {
            host = rest[..<colon]
            portText = rest[rest.index(after: colon)...]
        } else {
            host = rest
        }
        guard !host.isEmpty else { throw ClusterURLError("no host in \"\(url)\"") }
        guard let portText else { return (String(host), 6379) }
        guard let port = Int(portText), (1...65535).contains(port) else {
            throw ClusterURLError("port must be 1…65535 in \"\(url)\"")
        }
        return (String(host), port)
    }
}

/// Why a `cluster.redis` address was refused.
public struct ClusterURLError: Error, CustomStringConvertible {
    /// What is wrong, for the config error.
    public let description: String

    init(_ description: String) {
        self.description = description
    }
}
