/// When a restore refused with a passing error (`conflict`, `unavailable`) is tried again, and
/// until when (`ClientConfiguration.restoreRetryTimeout`).
///
/// Why a bound: the usual `conflict` after a failover is the client's own previous connection,
/// whose records go once the cluster declared its node down (`node_timeout_ms` plus up to a
/// second); one that lasts longer is someone else's, and the app must hear of it.
struct RestoreRetry: Sendable {
    /// Seconds before the first retry.
    static let firstDelay = 0.1
    /// The longest delay between retries, in seconds.
    static let maxDelay = 1.0

    /// Uptime (ns) from which a refusal is final.
    let deadline: UInt64
    /// Seconds until this attempt (the schedule's; the wait is a random point in its upper half).
    let delay: Double

    /// The first retry after a refusal at `now`; nil when retrying is off (`timeout` ≤ 0).
    static func first(within timeout: Double, now: UInt64) -> RestoreRetry? {
        guard timeout > 0 else { return nil }
        return RestoreRetry(deadline: now + UInt64(timeout * 1e9), delay: min(firstDelay, timeout))
    }

    /// The retry after this one's attempt was refused at `now`: twice the delay, capped, and
    /// not much past the deadline (the last attempt lands there, give or take `firstDelay`);
    /// nil once the deadline has passed.
    func next(now: UInt64) -> RestoreRetry? {
        guard now < deadline else { return nil }
        let left = Double(deadline - now) / 1e9
        return RestoreRetry(deadline: deadline, delay: max(Self.firstDelay, min(delay * 2, Self.maxDelay, left)))
    }

    /// The wait before this attempt: a random point in the upper half of `delay`, so clients
    /// that failed over together do not retry in lock step.
    var jittered: Double { Double.random(in: (delay / 2)...delay) }
}
