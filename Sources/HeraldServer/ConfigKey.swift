/// The keys of `config/heraldd.json5`, with the rule each value must satisfy.
///
/// The raw value is the file's snake_case spelling; an unknown spelling is a start-up error,
/// because a typo (`prot`) silently falling back to a default is worse than refusing to start.
enum ConfigKey: String, Sendable, CaseIterable {
    case host
    case port
    case unix
    case dataDir = "data_dir"
    case workers
    case logLevel = "log_level"
    case maxLine = "max_line"
    case maxErrors = "max_errors"
    case heartbeatMs = "heartbeat_ms"
    case maxPending = "max_pending"
    case slowConsumer = "slow_consumer"
    case history
    case historyBytes = "history_bytes"
    case fsync
    case maxValueBytes = "max_value_bytes"
    case maxListLength = "max_list_length"
    case maxRetainedBytes = "max_retained_bytes"
    case compactMinBytes = "compact_min_bytes"
    case maxConnections = "max_connections"
    case maxSubs = "max_subs"
    case maxChannels = "max_channels"
    case maxRequests = "max_requests"
    case maxSignals = "max_signals"
    case monitorPort = "monitor_port"
    case monitorHost = "monitor_host"
    case monitorTimeoutMs = "monitor_timeout_ms"
    case monitorAuth = "monitor_auth"
    case tlsPort = "tls_port"
    case tlsHost = "tls_host"
    case tlsCert = "tls_cert"
    case tlsKey = "tls_key"
    case maxLocks = "max_locks"
    case maxArgsBytes = "max_args_bytes"
    case presenceMaxMembers = "presence_max_members"
    case presenceGraceMs = "presence_grace_ms"
    case maxInfoBytes = "max_info_bytes"
    case dedupWindowMs = "dedup_window_ms"
    case maxDedupIDs = "max_dedup_ids"
    case maxConnArgsBytes = "max_conn_args_bytes"
    case maxArgsTotal = "max_args_total"
    case maxDeclared = "max_declared"
    case maxLinks = "max_links"
    case maxPendingTotal = "max_pending_total"
    case pacePending = "pace_pending"
    case auth
    case authTimeoutMs = "auth_timeout_ms"
    case authMaxLine = "auth_max_line"
    case unixMode = "unix_mode"
    case tlsTimeoutMs = "tls_timeout_ms"
    case tlsCiphers = "tls_ciphers"
    case passBudgetUs = "pass_budget_us"
    case maxUnauthenticated = "max_unauthenticated"
    case authFailLimit = "auth_fail_limit"
    case authFailWindowMs = "auth_fail_window_ms"
    case authBlockMs = "auth_block_ms"
    case userLimits = "user_limits"
    case diskFullTimeoutMs = "disk_full_timeout_ms"
    case maxWriterQueueBytes = "max_writer_queue_bytes"
    case cluster
    case wsPort = "ws_port"
    case wssPort = "wss_port"
    case wsOrigins = "ws_origins"

    /// Longest Unix socket path: `sun_path` is 108 bytes on Linux, one of them the NUL.
    static let maxUnixPathBytes = 107

    /// What a value of this key must look like.
    var rule: ValueRule {
        switch self {
        case .host: return .text(maxBytes: nil)
        case .port: return .integer(0...65535)
        case .unix: return .text(maxBytes: Self.maxUnixPathBytes)
        case .dataDir: return .text(maxBytes: nil)
        case .workers: return .integer(1...64)
        case .logLevel: return .choice(LogLevel.allCases.map(\.rawValue))
        case .maxLine: return .integer(1024...268_435_456)
        case .maxErrors: return .integer(1...1_000_000)
        case .heartbeatMs: return .integerOffOrAtLeast(10)
        case .maxPending: return .integerAtLeast(65536)
        case .slowConsumer: return .choice(SlowConsumerPolicy.allCases.map(\.rawValue))
        case .history: return .integer(0...1_000_000)
        case .historyBytes: return .integerAtLeast(0)
        case .fsync: return .choice(FsyncPolicy.allCases.map(\.rawValue))
        case .maxValueBytes: return .integer(1...268_435_456)
        case .maxListLength: return .integer(1...100_000_000)
        case .maxRetainedBytes: return .integerAtLeast(0)
        case .compactMinBytes: return .integerAtLeast(0)
        case .maxConnections: return .integer(1...10_000_000)
        case .maxSubs: return .integer(1...100_000_000)
        case .maxChannels: return .integer(1...1_000_000_000)
        case .maxRequests: return .integer(1...10_000_000)
        case .maxSignals: return .integer(1...10_000_000)
        case .monitorPort: return .integer(0...65535)
        case .monitorHost: return .text(maxBytes: nil)
        case .monitorTimeoutMs: return .integer(100...600_000)
        case .monitorAuth: return .boolean
        case .tlsPort, .wsPort, .wssPort: return .integer(0...65535)
        case .wsOrigins: return .section("a list of exact origins (\"https://app.example.com\") or \"*\"")
        case .tlsHost, .tlsCert, .tlsKey: return .text(maxBytes: nil)
        case .maxLocks, .maxDeclared, .maxLinks: return .integer(1...10_000_000)
        case .maxArgsBytes: return .integer(2...1_048_576)
        case .presenceMaxMembers: return .integer(1...10_000_000)
        case .presenceGraceMs: return .integer(0...3_600_000)
        case .maxInfoBytes: return .integer(2...65_536)
        case .dedupWindowMs: return .integer(1...86_400_000)
        case .maxDedupIDs: return .integer(0...100_000_000)
        case .maxConnArgsBytes: return .integer(2...1 << 30)
        case .maxArgsTotal: return .integer(2...1 << 40)
        case .maxPendingTotal: return .integer(1_048_576...1 << 40)
        case .pacePending: return .integerOffOrAtLeast(16384)
        case .auth: return .section("an object: { users: [{ name, token_hash or token, publish?, subscribe? }…] }")
        case .authTimeoutMs: return .integer(100...3_600_000)
        case .authMaxLine: return .integer(256...1_048_576)
        case .unixMode: return .octalMode
        case .tlsTimeoutMs: return .integer(100...600_000)
        case .passBudgetUs: return .integer(0...1_000_000)
        case .tlsCiphers: return .text(maxBytes: nil)
        case .maxUnauthenticated: return .integer(1...10_000_000)
        case .authFailLimit: return .integer(1...1_000_000)
        case .authFailWindowMs, .authBlockMs: return .integer(1_000...86_400_000)
        case .diskFullTimeoutMs: return .integer(100...3_600_000)
        case .maxWriterQueueBytes: return .integer(1_048_576...1 << 40)
        case .cluster: return .section("an object: { redis: \"redis://host:port\", node: NAME, key_prefix? }")
        case .userLimits:
            return .section("an object: { connections?, subscriptions?, channels?, retained_bytes?, history_bytes?, "
                + "pending_bytes? } of positive integers")
        }
    }

    /// Whether the key may be absent from a running config (`null` in the file means "unset").
    var isOptional: Bool {
        switch self {
        case .unix, .dataDir, .monitorPort, .tlsPort, .tlsHost, .tlsCert, .tlsKey, .cluster, .wsPort, .wssPort: return true
        default: return false
        }
    }

    /// Whether SIGHUP may apply a new value without a restart.
    ///
    /// Listeners, the data directory and the worker threads are built once at start-up;
    /// limits and the log level are read per event, so they can change under a running server.
    var isLive: Bool {
        switch self {
        case .host, .port, .unix, .unixMode, .dataDir, .workers, .fsync, .compactMinBytes: return false
        case .monitorPort, .monitorHost: return false
        case .monitorTimeoutMs: return true
        // Read by each monitor request; a file turning it on without an admin user is refused.
        case .monitorAuth: return true
        case .tlsPort, .tlsHost, .tlsCert, .tlsKey, .tlsCiphers, .passBudgetUs, .cluster: return false
        case .wsPort, .wssPort: return false
        // Read by each upgrade request.
        case .wsOrigins: return true
        // Read per connection when it is accepted, like the auth deadline.
        case .tlsTimeoutMs: return true
        case .logLevel, .maxLine, .maxErrors, .heartbeatMs, .maxPending, .slowConsumer: return true
        case .history, .historyBytes, .maxValueBytes, .maxListLength, .maxRetainedBytes: return true
        case .maxConnections, .maxSubs, .maxChannels, .maxRequests, .maxSignals, .maxLocks: return true
        case .maxArgsBytes, .maxDeclared, .maxLinks, .maxPendingTotal, .pacePending: return true
        case .presenceMaxMembers, .presenceGraceMs, .maxInfoBytes, .dedupWindowMs, .maxDedupIDs: return true
        case .maxConnArgsBytes, .maxArgsTotal: return true
        case .auth, .authTimeoutMs, .authMaxLine: return true
        case .maxUnauthenticated, .authFailLimit, .authFailWindowMs, .authBlockMs, .userLimits: return true
        // Read by the broker per state op and per tick.
        case .diskFullTimeoutMs, .maxWriterQueueBytes: return true
        }
    }
}
