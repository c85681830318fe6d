/// What one authenticated user may take of what every user shares (issue 12, "Fair shares").
///
/// Each figure bounds the sum over all of that user's connections, so one user cannot fill
/// what the others need however many connections it opens. The defaults keep any one user
/// well under the daemon-wide caps; the config's `user_limits` replaces them for every user,
/// and a user's own `limits` replaces them for that user (`Config+Auth.swift`). Without auth
/// there is one anonymous user and these do not apply (the daemon-wide caps still do).
public struct UserLimits: Sendable, Equatable {
    /// Connections open at once (`connections`).
    public var connections: Int
    /// Subscriptions across its connections (`subscriptions`).
    public var subscriptions: Int
    /// Channel records it created that still exist (`channels`).
    public var channels: Int
    /// Bytes of retained state (name plus content) of the channels whose content its writes
    /// last changed (`retained_bytes`); a write past it is `limit` (`RetainedHolders`).
    public var retainedBytes: Int
    /// Bytes of history its events hold (`history_bytes`); past it its oldest events leave
    /// history (`UserHistoryLedger`).
    public var historyBytes: Int
    /// Outbound bytes queued or in flight across its connections (`pending_bytes`).
    public var pendingBytes: Int
    /// Bytes of `args` of its subscriptions (`args_bytes`).
    public var argsBytes: Int = 16 << 20
    /// `pub`s a second across its connections (`pub_per_s`; 0: no limit): past it their
    /// reads pause (`UserRate`).
    public var pubPerS = 0
    /// Bytes read a second across its connections (`bytes_in_per_s`; 0: no limit).
    public var bytesInPerS = 0
    /// Lines (ops of any kind) a second across its connections (`ops_per_s`; 0: no limit).
    public var opsPerS = 0

    /// Creates limits; the defaults are the protocol's.
    public init(connections: Int = 1_000, subscriptions: Int = 1_000_000, channels: Int = 1_000_000,
                retainedBytes: Int = 64 << 20, historyBytes: Int = 16 << 20, pendingBytes: Int = 256 << 20) {
        self.connections = connections
        self.subscriptions = subscriptions
        self.channels = channels
        self.retainedBytes = retainedBytes
        self.historyBytes = historyBytes
        self.pendingBytes = pendingBytes
    }
}
