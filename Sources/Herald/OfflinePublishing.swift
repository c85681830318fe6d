/// Keeping publishes made while disconnected, to send after the reconnect
/// (``ClientConfiguration/offlinePublishing``; docs/client.md, "Offline publishes").
///
/// With it, every `publish` and `post` carries an idempotency `id` (docs/protocol.md,
/// "Idempotent publish") and stays in the client's outbox until the daemon answered it: one
/// made while disconnected waits there, one whose answer was lost with the connection is sent
/// again with the same `id`, so the daemon delivers each once (within its `dedup_window_ms`,
/// default two minutes). Bounded by count and bytes: a publish past the bound is refused with
/// ``HeraldClientError/offlineQueueFull(count:bytes:)``, never dropped silently.
public struct OfflinePublishing: Sendable, Equatable {
    /// The most publishes kept unanswered at once.
    public var maxCount: Int
    /// The most bytes (channel, `id` and data) kept unanswered at once.
    public var maxBytes: Int

    /// Creates a bound.
    /// - Parameters:
    ///   - maxCount: publishes kept at once (default 1,000).
    ///   - maxBytes: bytes kept at once (default 1 MiB).
    public init(maxCount: Int = 1000, maxBytes: Int = 1 << 20) {
        self.maxCount = maxCount
        self.maxBytes = maxBytes
    }
}
