import HeraldBroker

/// Everything `heraldd` reads from `config/heraldd.json5`, with a default for every key.
///
/// One plain value: the loader builds it, command-line flags override it, SIGHUP swaps in the
/// live part of a freshly loaded one. Property names are the camelCase of the file's snake_case keys.
public struct Config: Equatable, Sendable {
    /// Address the TCP listener binds (`host`). Loopback by default: exposing the daemon is a choice.
    public var host: String = "127.0.0.1"
    /// TCP port (`port`); `0` lets the OS pick one, which tests use to run in parallel.
    public var port: Int = 7400
    /// Path of a Unix socket listener (`unix`), or `nil` for none.
    public var unix: String? = nil
    /// Permission bits the Unix socket gets after bind (`unix_mode`, written `"0660"`):
    /// whoever may write the socket file may talk to the daemon, so owner and group only.
    public var unixMode: Int = 0o660
    /// Directory for the persistence files (`data_dir`), or `nil` to keep state in memory only.
    public var dataDir: String? = nil
    /// Number of event-loop threads (`workers`).
    public var workers: Int = 1
    /// Lowest level written to the log (`log_level`).
    public var logLevel: LogLevel = .info
    /// Longest request line in bytes (`max_line`); a longer one is answered `line_too_long`.
    public var maxLine: Int = 1_048_576
    /// Protocol errors in a row before the connection is closed (`max_errors`).
    public var maxErrors: Int = 100
    /// Milliseconds between heartbeats to idle clients (`heartbeat_ms`); `0` turns them off.
    public var heartbeatMs: Int = 30_000
    /// Bytes queued for one connection before it counts as a slow consumer (`max_pending`).
    public var maxPending: Int = 67_108_864
    /// What happens to a slow consumer (`slow_consumer`).
    public var slowConsumer: SlowConsumerPolicy = .disconnect
    /// Events kept per channel for `sub` with `since` (`history`); `0` keeps none.
    public var history: Int = 100
    /// Bytes of history kept over all channels together (`history_bytes`).
    public var historyBytes: Int = 67_108_864
    /// When the state log is flushed to disk (`fsync`).
    public var fsync: FsyncPolicy = .everysec
    /// Largest retained value in bytes; a list counts as its JSON text (`max_value_bytes`).
    public var maxValueBytes: Int = 1_048_576
    /// Most open connections; one more is answered `limit` and closed (`max_connections`).
    public var maxConnections: Int = 100_000
    /// Most subscriptions one connection may hold (`max_subs`).
    public var maxSubs: Int = 100_000
    /// Most channel records the daemon keeps (`max_channels`); a new channel past it is `limit`.
    public var maxChannels: Int = 10_000_000
    /// Most requests one connection may have waiting for a reply (`max_requests`).
    public var maxRequests: Int = 100_000
    /// Most signals one connection may have under way (`max_signals`).
    public var maxSignals: Int = 100_000
    /// Most locks one connection may hold (`max_locks`).
    public var maxLocks: Int = 100_000
    /// Longest `args` of one subscription in bytes (`max_args_bytes`).
    public var maxArgsBytes: Int = 4_096
    /// Members past which a channel's presence watchers get counts, not joins and leaves
    /// (`presence_max_members`).
    public var presenceMaxMembers: Int = 1_000
    /// How long a disconnected member with an `info.instance` stays, so a reconnect is no
    /// leave and no join (`presence_grace_ms`; 0: leaves are prompt).
    public var presenceGraceMs: Int = 0
    /// Longest `info` a connection may give at `hello`, in bytes of raw JSON (`max_info_bytes`).
    public var maxInfoBytes: Int = 1_024
    /// How long a `pub` `id` is remembered per channel (`dedup_window_ms`).
    public var dedupWindowMs: Int = 120_000
    /// Most `pub` ids remembered at once, oldest dropped first (`max_dedup_ids`; 0: none).
    public var maxDedupIDs: Int = 100_000
    /// All `args` of one connection's subscriptions, in bytes (`max_conn_args_bytes`).
    public var maxConnArgsBytes: Int = 1 << 20
    /// All `args` of every subscription in the daemon, in bytes (`max_args_total`).
    public var maxArgsTotal: Int = 256 << 20
    /// Most instance channels one connection may have declared (`max_declared`).
    public var maxDeclared: Int = 100_000
    /// Most links one connection may hold (`max_links`).
    public var maxLinks: Int = 100_000
    /// Bound on queued plus in-flight output over all connections (`max_pending_total`).
    public var maxPendingTotal: Int = 512 << 20
    /// A subscriber's pending bytes past which the publisher that put them there is paced:
    /// not read until the subscriber wrote half of them, at most `Broker.paceLimitMs`
    /// (`pace_pending`; 0: off; only with `workers: 1`).
    public var pacePending: Int = 262_144
    /// Users allowed to connect (`auth.users`); none turns auth off.
    public var authUsers: [AuthUser] = []
    /// Milliseconds a connection has to authenticate when auth is on (`auth_timeout_ms`).
    public var authTimeoutMs: Int = 2_000
    /// Longest request line before authentication (`auth_max_line`).
    public var authMaxLine: Int = 4_096
    /// Connections not yet authenticated at most (`max_unauthenticated`); a newcomer past it
    /// closes the oldest of them. Never more than `max_connections` in effect.
    public var maxUnauthenticated: Int = 1_000
    /// Wrong tokens from one address within `auth_fail_window_ms` that block it (`auth_fail_limit`).
    public var authFailLimit: Int = 10
    /// The window failed `hello`s are counted in, ms (`auth_fail_window_ms`).
    public var authFailWindowMs: Int = 60_000
    /// How long a blocked address has its `hello`s refused, ms (`auth_block_ms`).
    public var authBlockMs: Int = 60_000
    /// What each user may take, unless its own `limits` say otherwise (`user_limits`).
    public var userLimits: UserLimits = UserLimits()
    /// Most elements in one retained list (`max_list_length`).
    public var maxListLength: Int = 100_000
    /// Bytes of retained state over all channels, names included (`max_retained_bytes`).
    public var maxRetainedBytes: Int = 268_435_456
    /// Log size below which it is never compacted into a snapshot (`compact_min_bytes`).
    public var compactMinBytes: Int = 1_048_576
    /// Milliseconds a state op's `ok` waits for its record to be written before it becomes
    /// `unavailable` (`disk_full_timeout_ms`).
    public var diskFullTimeoutMs: Int = 5_000
    /// Bytes of state changes the writer may hold unwritten; past it changes are refused
    /// with `unavailable` (`max_writer_queue_bytes`).
    public var maxWriterQueueBytes: Int = 64 << 20
    /// TCP port of the HTTP monitor (`monitor_port`: `/healthz`, `/varz`, `/metrics`), or
    /// `nil` for none. Off by default: figures about the daemon are the operator's to expose.
    public var monitorPort: Int? = nil
    /// Address the HTTP monitor binds (`monitor_host`).
    public var monitorHost: String = "127.0.0.1"
    /// Milliseconds an HTTP client has to send its request and take the answer (`monitor_timeout_ms`).
    public var monitorTimeoutMs: Int = 5_000
    /// Whether every monitor path but `/healthz` needs HTTP Basic credentials of a user with
    /// `admin: true` (`monitor_auth`, issue 37); a config turning it on without one is refused.
    public var monitorAuth: Bool = false
    /// Port of the WebSocket listener (`ws_port`, issue 34), or `nil` for none; `0` lets the
    /// OS pick one. It listens on `host`.
    public var wsPort: Int? = nil
    /// Port of the WebSocket listener over TLS (`wss_port`), with `tls_cert` and `tls_key`.
    public var wssPort: Int? = nil
    /// The origins a browser's upgrade may come from (`ws_origins`: exact origins, or `*`);
    /// empty, every request carrying an `Origin` is refused (a page on any site could drive
    /// a daemon on localhost otherwise).
    public var wsOrigins: [String] = []
    /// Port of the TLS listener (`tls_port`), or `nil` for none; `0` lets the OS pick one.
    public var tlsPort: Int? = nil
    /// Address the TLS listener binds (`tls_host`); `nil` binds the same address as `host`.
    public var tlsHost: String? = nil
    /// PEM certificate chain the TLS listener presents (`tls_cert`); required with `tls_port`.
    public var tlsCert: String? = nil
    /// PEM private key of that certificate (`tls_key`); required with `tls_port`.
    public var tlsKey: String? = nil
    /// Milliseconds a TLS connection has to finish its handshake before it is closed
    /// (`tls_timeout_ms`), so a peer that opens the port and says nothing costs a socket for
    /// two seconds, not until the heartbeat notices it.
    public var tlsTimeoutMs: Int = 2_000
    /// How long one connection's lines may run per loop pass, in µs (`pass_budget_us`; 0: no
    /// limit). Past it the connection yields to the others until the next pass.
    public var passBudgetUs: Int = 1_000
    /// The `cluster` section; nil runs the daemon alone (docs/cluster.md). Restart to change.
    public var cluster: ClusterSettings?
    /// OpenSSL cipher list for TLS 1.2 (`tls_ciphers`); TLS 1.3 keeps OpenSSL's suites.
    /// The default allows only ECDHE key exchange with AEAD ciphers: forward secrecy, no CBC.
    public var tlsCiphers: String = Config.defaultTLSCiphers

    /// The TLS 1.2 cipher list used when `tls_ciphers` is not set.
    public static let defaultTLSCiphers = "ECDHE+AESGCM:ECDHE+CHACHA20"

    /// Creates a config with every key at its default.
    public init() {}

    /// Every key the config file accepts, in the file's snake_case spelling.
    public static let allKeys: [String] = ConfigKey.allCases.map(\.rawValue)

    /// The keys SIGHUP applies to a running server; the others need a restart.
    public static let liveKeys: [String] = ConfigKey.allCases.filter(\.isLive).map(\.rawValue)
}
