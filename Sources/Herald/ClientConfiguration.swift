/// Where the daemon listens.
public enum Endpoint: Sendable, Equatable, CustomStringConvertible {
    /// TCP; `host` may be a name or an IPv4/IPv6 address.
    case tcp(host: String, port: Int)
    /// A Unix domain socket path.
    case unix(path: String)

    /// `host:port` or the socket path.
    public var description: String {
        switch self {
        case .tcp(let host, let port): return "\(host):\(port)"
        case .unix(let path): return path
        }
    }
}

/// Reconnect with capped exponential backoff and full jitter.
///
/// Why jitter: when a daemon restarts, every client lost it at the same moment; without jitter
/// they would all come back in lock step (a reconnect storm).
public struct ReconnectPolicy: Sendable, Equatable {
    /// The delay before the first retry, in seconds.
    public var initialDelay: Double
    /// The longest delay between attempts, in seconds.
    public var maxDelay: Double
    /// Factor by which the delay grows per attempt.
    public var multiplier: Double
    /// Attempts before giving up; nil retries forever.
    public var maxAttempts: Int?

    /// Creates a policy.
    /// - Parameters:
    ///   - initialDelay: seconds before the first retry (default 0.1).
    ///   - maxDelay: cap in seconds (default 5).
    ///   - multiplier: growth per attempt (default 2).
    ///   - maxAttempts: nil for forever.
    public init(initialDelay: Double = 0.1, maxDelay: Double = 5, multiplier: Double = 2, maxAttempts: Int? = nil) {
        self.initialDelay = initialDelay
        self.maxDelay = maxDelay
        self.multiplier = multiplier
        self.maxAttempts = maxAttempts
    }

    /// Never reconnect: a lost connection stays `disconnected`.
    public static let never = ReconnectPolicy(maxAttempts: 0)

    /// The delay before `attempt` (1-based): a random point in the upper half of the capped
    /// exponential, so clients spread out but none retries sooner than half the schedule.
    func delay(attempt: Int) -> Double {
        let exponent = Double(max(0, attempt - 1))
        let capped = min(maxDelay, initialDelay * pow(multiplier, exponent))
        return Double.random(in: (capped / 2)...max(capped / 2, capped))
    }

    private func pow(_ base: Double, _ exponent: Double) -> Double {
        var result = 1.0
        var remaining = Int(min(exponent, 64))
        while remaining > 0 {
            result *= base
            remaining -= 1
        }
        return result
    }
}

/// How a `HeraldClient` connects and behaves.
public struct ClientConfiguration: Sendable {
    /// Where to connect first.
    public var endpoint: Endpoint
    /// Other addresses of the same service, e.g. the other nodes of a cluster (docs/client.md,
    /// "Several endpoints"): after a failed attempt or a lost connection the client tries the
    /// next address in `endpoints`, round robin, with the reconnect policy's backoff, and
    /// restores everything on whichever node answers.
    public var alternateEndpoints: [Endpoint]
    /// `endpoint` followed by `alternateEndpoints`, in the order they are tried.
    public var endpoints: [Endpoint] { [endpoint] + alternateEndpoints }
    /// Display name sent in `hello`.
    public var name: String?
    /// Auth token sent in `hello` (when the daemon has users).
    public var token: String?
    /// Whether this connection receives its own publications (`hello` `echo`).
    public var echo: Bool
    /// Reconnect behaviour after a connection that had been up is lost.
    public var reconnect: ReconnectPolicy
    /// Seconds to wait for an answer to a request before failing with `.timeout`.
    public var requestTimeout: Double
    /// Seconds allowed for TCP connect plus the `info`/`hello` handshake.
    public var connectTimeout: Double
    /// Longest line accepted from the daemon, in bytes.
    public var maxLine: Int
    /// TLS for the connection (the daemon's `tls_port`), or nil for plain TCP / Unix socket.
    public var tls: TLSOptions?
    /// Seconds a restore after a reconnect is retried while the daemon refuses it with an error
    /// that may pass (default 30; 0: never retried): `conflict` for an instance channel or a
    /// link (after a failover the client's own previous connection holds them until the cluster
    /// declares its node down, `cluster.node_timeout_ms`, default 5 s, plus up to a second), and
    /// `unavailable` for anything (the node cannot reach Redis yet). Retries start after 0.1 s
    /// and back off to 1 s, with jitter. Meanwhile the item stays wanted (listed in `links`,
    /// `declaredChannels`); past the bound it is forgotten and reported as
    /// ``HeraldClientError/restoreFailed(kind:channel:cause:)``.
    public var restoreRetryTimeout: Double
    /// The app instance named in `hello`'s `info` (`{"instance":…}`), e.g. an app's own
    /// per-install id; nil (the default): a UUID made once per ``HeraldClient`` object, kept
    /// across its reconnects (``HeraldClient/instance``).
    ///
    /// It is what makes the daemon's `presence_grace_ms` work: a connection that drops and comes
    /// back within the grace under the same user and instance keeps its place in presence, with
    /// no leave and no join for the channel's watchers. Two clients live at once must not share
    /// one (the second would take the first one's place when the first drops).
    public var instance: String?
    /// What other connections see of this one in presence (``RemotePresence``): a JSON object
    /// sent as `hello`'s `info`, with `instance` added (an `instance` of its own wins). Make it
    /// with `RawJSON(encoding:)`, e.g. a display name and avatar. The daemon takes at most
    /// `max_info_bytes` (default 1 KiB) and refuses a longer `hello`. A value that is not an
    /// object is sent as it is, without `instance`.
    public var info: RawJSON?
    /// Whether the client watches the device's network path (default true; Apple platforms,
    /// `NWPathMonitor`; Linux has no monitor): with no usable path a lost connection waits in
    /// ``ConnectionState/waitingForNetwork`` instead of burning reconnect attempts, and
    /// reconnects the moment the path is back, without waiting out the backoff; a better path
    /// (Wi-Fi after cellular) moves the connection to it.
    public var followsNetworkPath: Bool = true
    /// Keep `publish`/`post` made while disconnected and send them after the reconnect, each
    /// with an idempotency `id` so none is delivered twice (``OfflinePublishing``); nil (the
    /// default): they throw ``HeraldClientError/notConnected``.
    public var offlinePublishing: OfflinePublishing?
    /// The most bytes queued for the daemon before `post` throws
    /// ``HeraldClientError/outboundFull(bytes:)`` (default 8 MiB): await
    /// ``HeraldClient/waitForOutboundRoom()`` to post on at the network's pace.
    public var maxOutboundBytes: Int = 8 << 20

    /// Creates a configuration.
    /// - Parameters:
    ///   - endpoint: where the daemon listens.
    ///   - name: display name for `hello`.
    ///   - token: auth token for `hello`.
    ///   - echo: receive own publications (default true, as the daemon).
    ///   - reconnect: reconnect policy.
    ///   - requestTimeout: seconds per request (default 10).
    ///   - connectTimeout: seconds per connect attempt (default 5).
    ///   - maxLine: longest accepted line (default 16 MiB).
    ///   - tls: TLS options when connecting to the daemon's TLS port (default nil: no TLS).
    ///   - alternateEndpoints: other nodes to fail over to (default none).
    ///   - restoreRetryTimeout: seconds a refused restore is retried (default 30; see the property).
    ///   - instance: the app instance named in `hello` (default nil: a UUID per client object).
    ///   - info: a JSON object other connections see in presence (default none).
    public init(endpoint: Endpoint, name: String? = nil, token: String? = nil, echo: Bool = true,
                reconnect: ReconnectPolicy = ReconnectPolicy(), requestTimeout: Double = 10,
                connectTimeout: Double = 5, maxLine: Int = 16 << 20, tls: TLSOptions? = nil,
                alternateEndpoints: [Endpoint] = [], restoreRetryTimeout: Double = 30,
                instance: String? = nil, info: RawJSON? = nil) {
        self.instance = instance
        self.info = info
        self.tls = tls
        self.restoreRetryTimeout = restoreRetryTimeout
        self.endpoint = endpoint
        self.alternateEndpoints = alternateEndpoints
        self.name = name
        self.token = token
        self.echo = echo
        self.reconnect = reconnect
        self.requestTimeout = requestTimeout
        self.connectTimeout = connectTimeout
        self.maxLine = maxLine
    }
}
