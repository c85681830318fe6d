/// One token bucket of a user's rate limits (`pub_per_s`, `bytes_in_per_s`, `ops_per_s`),
/// counted in thousandths of a token on the broker's millisecond clock, so that `perSecond`
/// tokens a second are exactly `perSecond` thousandths a millisecond and nothing is rounded.
///
/// The bucket holds a tenth of a second's worth (at least one token): a user may burst that
/// much, then runs at the rate. A line is let through while the level is above zero and may
/// take it below (a line's size is known only once read), so the rate holds on average; once
/// at or below zero the user waits until the level is back to `resumeLevel`, at least 10 ms'
/// worth, so a throttled user costs its loop one timer a 10 ms, not one per token.
struct RateBucket: Equatable {
    /// Tokens a second (the configured figure), in this node's share in cluster mode.
    private(set) var perSecond: Int
    /// The most the bucket holds, in thousandths.
    private(set) var depth: Int
    /// What it holds now, in thousandths; negative after a line took more than was left.
    private(set) var level: Int
    /// When it was last refilled (broker ms).
    private var refilledAt: Int

    /// A full bucket for `perSecond` tokens a second.
    init(perSecond: Int, now: Int) {
        self.perSecond = max(1, perSecond)
        depth = Self.depth(for: self.perSecond)
        level = depth
        refilledAt = now
    }

    /// A tenth of a second's worth, at least one token, in thousandths.
    private static func depth(for perSecond: Int) -> Int {
        max(1_000, perSecond.multipliedReportingOverflow(by: 100).overflow ? Int.max / 4 : perSecond * 100)
    }

    /// The level a waiting user is let through again at: 10 ms' worth, at least one token,
    /// at most the depth.
    var resumeLevel: Int { min(depth, max(1_000, perSecond * 10)) }

    /// Changes the rate (a reload, or a new cluster share), keeping the level within the
    /// new depth.
    mutating func setRate(_ perSecond: Int, now: Int) {
        refill(now: now)
        self.perSecond = max(1, perSecond)
        depth = Self.depth(for: self.perSecond)
        level = min(level, depth)
    }

    /// Adds what the time since the last refill earned.
    mutating func refill(now: Int) {
        let elapsed = now - refilledAt
        guard elapsed > 0 else { return }
        refilledAt = now
        let earned = elapsed.multipliedReportingOverflow(by: perSecond)
        level = earned.overflow || earned.partialValue >= depth - level ? depth : level + earned.partialValue
    }

    /// Takes `tokens` whole tokens.
    mutating func take(_ tokens: Int) {
        let cost = tokens.multipliedReportingOverflow(by: 1_000)
        level = cost.overflow ? Int.min / 2 : max(Int.min / 2, level - cost.partialValue)
    }

    /// Whether a line may go now (after `refill`).
    var allows: Bool { level > 0 }

    /// Milliseconds until the level is back to `resumeLevel` (0 when it is there).
    var waitMs: Int {
        guard level < resumeLevel else { return 0 }
        return (resumeLevel - level + perSecond - 1) / perSecond
    }
}
