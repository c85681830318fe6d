/// How much one call may look at or list (issue 12: every operation costs what it touches).
///
/// The defaults are the daemon's. They are a value on the broker rather than constants so the
/// fuzz harness can make them tiny: with a few dozen names, a budget of 10,000 is never
/// reached, and the paths that resume a walk (`channels`' `next` from a spent budget, a
/// truncated `lock` answer, a sweep going on from its cursor) would never be exercised.
public struct ScanBudgets: Sendable, Equatable {
    /// Most directory names one `channels` or `lock {ch}` walk looks at (`listScanBudget`).
    public var listScan = Broker.listScanBudget
    /// Most subscriptions a `lock {ch}` answer lists before `"truncated":true` (`maxListLimit`).
    public var lockList = Broker.maxListLimit
    /// Most directory names one channel-record sweep looks at per tick (`sweepBudget`).
    public var sweep = Broker.sweepBudget

    /// Creates the daemon's budgets.
    public init() {}
}
