/// The `cluster` section: this node's place in a cluster of heraldd nodes over Redis
/// (docs/cluster.md).
///
///     cluster: { redis: "redis://127.0.0.1:6379", node: "a", key_prefix: "herald:", node_timeout_ms: 5000 }
///
/// Absent, heraldd runs alone and none of the cluster code runs.
public struct ClusterSettings: Equatable, Sendable {
    /// Redis's host.
    public var redisHost: String
    /// Redis's port.
    public var redisPort: Int
    /// This node's name, unique in the cluster (in `info`, `stats`, `$sys` events).
    public var node: String
    /// Prefix of every Redis key and channel the cluster uses, so clusters can share a Redis.
    public var keyPrefix: String
    /// How long a node may go without refreshing its liveness key before the others declare
    /// it down (`$sys.node.down`, its interest and queue-group slots removed).
    public var nodeTimeoutMs: Int = ClusterSettings.defaultNodeTimeoutMs

    /// The default `node_timeout_ms`.
    public static let defaultNodeTimeoutMs = 5_000
    /// The accepted range of `node_timeout_ms`.
    public static let nodeTimeoutRange = 1_000...600_000

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
