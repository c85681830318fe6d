/// Counters reported by the `stats` op.
///
/// Byte counters are fed by the server (it sees the sockets); message counters by the broker.
public struct BrokerStats: Sendable, Equatable {
    /// Requests handled (every non-blank line).
    public var msgsIn: Int = 0
    /// Events delivered to subscriptions.
    public var msgsOut: Int = 0
    /// Bytes read from all connections.
    public var bytesIn: Int = 0
    /// Bytes written to all connections.
    public var bytesOut: Int = 0
    /// Connections closed or throttled for falling behind.
    public var slowConsumers: Int = 0
    /// Events skipped under the `drop` policy.
    public var dropped: Int = 0
    /// Times a publisher was paced for a subscriber past `pace_pending` (`Broker+Pacing`).
    public var paced: Int = 0
    /// Of those, pauses that ran to their time limit (the subscriber did not catch up).
    public var paceTimeouts: Int = 0
    /// Connections accepted since start.
    public var totalConnections: Int = 0

    /// Creates zeroed counters.
    public init() {}
}
