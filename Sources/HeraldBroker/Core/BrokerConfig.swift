/// What the broker does when a connection's outbound bytes pass `maxPending`.
public enum OverflowPolicy: Sendable, Equatable {
    /// Send a `slow_consumer` error frame, then close the connection.
    case disconnect
    /// Skip events for that subscriber and report the count as `dropped:N` on the next one.
    case drop
}

/// The broker's tunables, a pure value the server builds from its `Config`.
///
/// All of these may change while the daemon runs (SIGHUP), so the broker reads them at
/// use time rather than caching derived values.
public struct BrokerConfig: Sendable, Equatable {
    /// Longest accepted request line in bytes (reported in `info`).
    public var maxLine: Int
    /// Malformed frames in a row after which a connection is closed.
    public var maxErrors: Int
    /// Silence after which the daemon pings a peer; 0 turns heartbeats off.
    public var heartbeatMs: Int
    /// Bound on a connection's queued plus in-flight outbound bytes.
    public var maxPending: Int
    /// What happens to a subscriber past `maxPending`.
    public var overflow: OverflowPolicy
    /// The daemon's version string, sent in `info`.
    public var version: String
    /// Names this life of the daemon's counters; new at every start.
    public var epoch: String
    /// Events kept per channel for `since` (0: no history).
    public var history: Int = 100
    /// Bound on the bytes of all channels' history together.
    public var historyBytes: Int = 64 << 20
    /// Most open connections; past it a new one gets `limit` and is closed.
    public var maxConnections = 100_000
    /// Most subscriptions per connection.
    public var maxSubs = 100_000
    /// Most channel records; a new channel past it is `limit`.
    public var maxChannels = 10_000_000
    /// Most requests one connection may have waiting for a reply.
    public var maxRequests = 100_000
    /// Most signals one connection may have under way.
    public var maxSignals = 100_000
    /// Most locks one connection may hold (`max_locks`).
    public var maxLocks = 100_000
    /// Bound on queued plus in-flight output over all connections (`max_pending_total`); past
    /// it the connections holding the most are cut first.
    public var maxPendingTotal = 512 << 20
    /// Pending bytes of a subscriber past which the publisher whose event put them there
    /// is paced (`pace_pending`, `Broker+Pacing`); `Int.max` turns pacing off.
    public var pacePending = Int.max
    /// Longest `args` of one subscription, in bytes of raw JSON (`max_args_bytes`).
    public var maxArgsBytes = 4_096
    /// Members past which presence watchers get counts instead of joins and leaves
    /// (`presence_max_members`).
    public var presenceMaxMembers = 1_000
    /// Grace for a disconnected member with an `info.instance` (`presence_grace_ms`).
    public var presenceGraceMs = 0
    /// Longest `hello` `info`, in bytes of raw JSON (`max_info_bytes`).
    public var maxInfoBytes = 1_024
    /// How long a `pub` `id` is remembered (`dedup_window_ms`).
    public var dedupWindowMs = 120_000
    /// Most `pub` ids remembered at once (`max_dedup_ids`).
    public var maxDedupIDs = 100_000
    /// All `args` of one connection's subscriptions, in bytes (`max_conn_args_bytes`).
    public var maxConnArgsBytes = 1 << 20
    /// All `args` of every subscription, in bytes (`max_args_total`): with the per-connection
    /// and per-user figures, what bound arguments can cost the daemon's memory.
    public var maxArgsTotal = 256 << 20
    /// Most instance channels one connection may have declared (`max_declared`).
    public var maxDeclared = 100_000
    /// Most links one connection may hold (`max_links`).
    public var maxLinks = 100_000
    /// Users, their permissions, the auth timeout and the pre-auth line limit.
    public var auth = AuthSettings()
    /// Bounds on retained values and lists.
    public var stateLimits = StateLimits(maxValueBytes: 1 << 20, maxListLength: 100_000, maxRetainedBytes: 256 << 20)
    /// Whether state changes are persisted: then the broker emits `StateRecord`s and holds
    /// each state op's `ok` until the server reports its record durable. Fixed at start.
    public var journaling = false
    /// How long a state op's `ok` may wait for its record to be written before the answer
    /// becomes `unavailable` (`disk_full_timeout_ms`).
    public var diskFullTimeoutMs = 5_000
    /// Bytes of state records the writer may hold unwritten (`max_writer_queue_bytes`); a
    /// change that would pass it is refused with `unavailable`.
    public var maxWriterQueueBytes = 64 << 20

    /// Creates a configuration; the defaults are the protocol's.
    public init(
        maxLine: Int = 1 << 20, maxErrors: Int = 100, heartbeatMs: Int = 30_000,
        maxPending: Int = 64 << 20, overflow: OverflowPolicy = .disconnect,
        version: String = "0.1.0", epoch: String = "0"
    ) {
        self.maxLine = maxLine
        self.maxErrors = maxErrors
        self.heartbeatMs = heartbeatMs
        self.maxPending = maxPending
        self.overflow = overflow
        self.version = version
        self.epoch = epoch
    }
}
