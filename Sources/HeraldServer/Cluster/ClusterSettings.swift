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
    /// What every link to Redis (the primary, under Sentinel) sends as `AUTH` first: from the
    /// URL's `user:password@`, or `redis_user` with `redis_password`, `redis_password_file`
    /// or `redis_password_env`.
    public var redisCredentials: RedisCredentials?
    /// Where to ask for the primary, when Redis runs under Sentinel (then `redisHost` and
    /// `redisPort` are only the last answer).
    public var sentinel: SentinelSettings?
    /// How many replicas must confirm a retained-state write or a `pub` with `rid` (`WAIT`) before its client
    /// gets the answer; 0 answers when the primary ran it. Unset under Sentinel, it is 1
    /// when the primary has a replica at join (`waitReplicasIsDefault`, issue 31).
    public var waitReplicas = 0
    /// Whether `wait_replicas` was left out of the configuration.
    public var waitReplicasIsDefault = true
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
    /// How many Redis keys one step of the idle channel record collection looks at
    /// (`ClusterEngine+Collection`); 0 turns the collection off.
    public var collectKeys = ClusterSettings.defaultCollectKeys
    /// The Redis primaries after the first (`cluster.shards`, issue 33): a channel's data
    /// lives on the shard `ShardMap` picks; the first shard (the fields above) also holds
    /// the cluster's own records. Empty with `cluster.redis` or `cluster.sentinel`.
    public var otherShards: [ClusterShard] = []

    /// How many Redis primaries the cluster's channels are spread over.
    public var shardCount: Int { 1 + otherShards.count }

    /// The shard list as the first shard records it (`{p}shards`) and start-up compares it:
    /// each shard's `redis://host:port` (`ShardList.recorded`), or `sentinel:MASTER`, without
    /// credentials, joined by `,`.
    public var shardList: String {
        let first = sentinel.map { "sentinel:" + $0.master } ?? "redis://" + redisAddress.description
        return ([first] + otherShards.map(\.listed)).joined(separator: ",")
    }

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

    /// The default `collect_keys`.
    public static let defaultCollectKeys = 5_000
    /// The accepted range of `collect_keys`.
    public static let collectKeysRange = 0...1_000_000

    /// The default `wait_timeout_ms`.
    public static let defaultWaitTimeoutMs = 1_000
    /// The accepted range of `wait_timeout_ms`.
    public static let waitTimeoutRange = 10...60_000
    /// The accepted range of `wait_replicas`.
    public static let waitReplicasRange = 0...64

    /// The default prefix.
    public static let defaultKeyPrefix = "herald:"

    /// Creates settings; `redis` is `redis://[[user]:password@]host:port` (port 6379 when
    /// left out).
    public init(redis: String, node: String, keyPrefix: String = ClusterSettings.defaultKeyPrefix,
                nodeTimeoutMs: Int = ClusterSettings.defaultNodeTimeoutMs) throws(ClusterURLError) {
        (redisHost, redisPort, redisCredentials) = try Self.parse(redis)
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

    /// Splits `redis://[[user]:password@]host:port`; IPv6 hosts go in brackets
    /// (`redis://[::1]:6379`); user and password are percent-decoded. Errors show the URL
    /// with its credentials cut out (`redacted`).
    static func parse(_ url: String) throws(ClusterURLError) -> (String, Int, RedisCredentials?) {
        let scheme = "redis://"
        let shown = redacted(url)
        if url.hasPrefix("rediss://") {
            throw ClusterURLError("rediss:// (TLS) is not built in: Debian's hiredis has no TLS; run stunnel beside the "
                + "node and give its local redis:// address (docs/cluster.md, \"Redis over TLS\"), found \"\(shown)\"")
        }
        guard url.hasPrefix(scheme) else { throw ClusterURLError("expected redis://host:port, found \"\(shown)\"") }
        var rest = Substring(url.dropFirst(scheme.count))
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        var credentials: RedisCredentials?
        if let at = rest.lastIndex(of: "@") {
            credentials = try Self.credentials(in: rest[..<at], shown: shown)
            rest = rest[rest.index(after: at)...]
        }
        guard !rest.contains("/") else {
            throw ClusterURLError("expected redis://host:port (no path), found \"\(shown)\"")
        }
        let (host, port) = try hostAndPort(rest, shown: shown)
        return (host, port, credentials)
    }

    /// `user:password`, `:password` or `password` (Redis's URL forms), percent-decoded.
    private static func credentials(in userInfo: Substring, shown: String) throws(ClusterURLError) -> RedisCredentials {
        let user: Substring?
        let password: Substring
        if let colon = userInfo.firstIndex(of: ":") {
            user = colon == userInfo.startIndex ? nil : userInfo[..<colon]
            password = userInfo[userInfo.index(after: colon)...]
        } else {
            user = nil
            password = userInfo
        }
        guard let decodedPassword = percentDecoded(password), !decodedPassword.isEmpty,
              let decodedUser = user.map({ percentDecoded($0) }) ?? .some(nil) else {
            throw ClusterURLError("bad user or password in \"\(shown)\" (an empty password, or a % not followed by two hex digits)")
        }
        return RedisCredentials(user: decodedUser, password: decodedPassword)
    }

    private static func hostAndPort(_ rest: Substring, shown: String) throws(ClusterURLError) -> (String, Int) {
        let host: Substring
        var portText: Substring?
        if rest.hasPrefix("["), let close = rest.firstIndex(of: "]") {
            host = rest[rest.index(after: rest.startIndex)..<close]
            let after = rest[rest.index(after: close)...]
            if after.hasPrefix(":") { portText = after.dropFirst() } else if !after.isEmpty {
                throw ClusterURLError("unexpected \"\(after)\" after the host in \"\(shown)\"")
            }
        } else if let colon = rest.lastIndex(of: ":") {
            host = rest[..<colon]
            portText = rest[rest.index(after: colon)...]
        } else {
            host = rest
        }
        guard !host.isEmpty else { throw ClusterURLError("no host in \"\(shown)\"") }
        guard let portText else { return (String(host), 6379) }
        guard let port = Int(portText), (1...65535).contains(port) else {
            throw ClusterURLError("port must be 1…65535 in \"\(shown)\"")
        }
        return (String(host), port)
    }

    /// `url` with whatever stands between `//` and the last `@` replaced by `***`, for
    /// messages: a password must not reach a log or an error.
    static func redacted(_ url: String) -> String {
        guard let at = url.lastIndex(of: "@") else { return url }
        let start = url.range(of: "//").map(\.upperBound) ?? url.startIndex
        guard start <= at else { return "***" + url[at...] }
        return url[..<start] + "***" + url[at...]
    }

    /// Percent-decodes `text` (`%40` is `@`), nil when a `%` is not followed by two hex digits.
    static func percentDecoded(_ text: Substring) -> String? {
        var bytes: [UInt8] = []
        var iterator = text.utf8.makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else { return nil }
            bytes.append(high << 4 | low)
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}

/// One Redis primary of `cluster.shards` after the first: a `redis://` URL or a Sentinel
/// group of its own.
public struct ClusterShard: Equatable, Sendable {
    /// The primary's host (under Sentinel: empty until a sentinel named it).
    public var host: String
    /// The primary's port (under Sentinel: 0 until a sentinel named it).
    public var port: Int
    /// `AUTH` for the primary: the URL's, else the cluster's `redis_password*`.
    public var credentials: RedisCredentials?
    /// Where to ask for this shard's primary, when it runs under Sentinel.
    public var sentinel: SentinelSettings?

    /// A shard at a fixed address.
    public init(host: String, port: Int, credentials: RedisCredentials?) {
        self.host = host
        self.port = port
        self.credentials = credentials
    }

    /// A shard whose primary the sentinels name.
    public init(sentinel: SentinelSettings) {
        host = ""
        port = 0
        self.sentinel = sentinel
    }

    /// How the shard list names it (no credentials).
    var listed: String { sentinel.map { "sentinel:" + $0.master } ?? "redis://" + RedisAddress(host: host, port: port).description }
}

/// Why a `cluster.redis` address was refused.
public struct ClusterURLError: Error, CustomStringConvertible {
    /// What is wrong, for the config error.
    public let description: String

    init(_ description: String) {
        self.description = description
    }
}
