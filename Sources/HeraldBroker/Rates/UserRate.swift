/// A user's rate limits on one node (issue 37, item 3; docs/protocol.md, "Rate limits"): a
/// token bucket per configured figure, shared by every connection of the user, and how long
/// its connections were held for them (`/metrics`).
///
/// The connections' reads are paused while a bucket is empty (the server's
/// `Connection+Throttle`): nothing is refused or dropped, TCP pushes back on the client, and
/// other users are not slowed. In cluster mode each node holds a share of each figure
/// (`share`), rebalanced once a second by the user's connections on each node.
final class UserRate {
    /// The user's name.
    let name: String
    /// The configured figures (0: none), the whole cluster's in cluster mode.
    private(set) var figures: (pub: Int, bytes: Int, ops: Int)
    /// This node's part of the figures in cluster mode, as a fraction `local / total` of the
    /// user's connections (1 / 1 on one node).
    private(set) var share: (local: Int, total: Int) = (1, 1)
    private var pub: RateBucket?
    private var bytes: RateBucket?
    private var ops: RateBucket?
    /// Until when (broker ms) some connection of the user waits.
    private var heldUntil = 0
    /// Milliseconds the user's connections were held, counted once per millisecond however
    /// many of them waited in it.
    private(set) var heldMs = 0
    /// Cluster mode: the connection count this node last told Redis (`Broker+Rates`).
    var reportedConnections = 0

    /// Rates for `limits` (which should have at least one).
    init(name: String, limits: UserLimits, now: Int) {
        self.name = name
        figures = (limits.pubPerS, limits.bytesInPerS, limits.opsPerS)
        rebuild(now: now)
    }

    /// Whether `limits` has any rate.
    static func applies(to limits: UserLimits) -> Bool {
        limits.pubPerS > 0 || limits.bytesInPerS > 0 || limits.opsPerS > 0
    }

    /// Takes new figures (a reload); buckets keep their level.
    func update(_ limits: UserLimits, now: Int) {
        let new = (limits.pubPerS, limits.bytesInPerS, limits.opsPerS)
        guard new != figures else { return }
        figures = new
        rebuild(now: now)
    }

    /// Takes this node's share of the figures (cluster mode): `local` of the user's `total`
    /// connections across the nodes.
    func setShare(local: Int, total: Int, now: Int) {
        let share = (max(1, local), max(1, total, local))
        guard share != self.share else { return }
        self.share = share
        rebuild(now: now)
    }

    /// A figure's share on this node (at least 1 a second when the figure is set).
    func shareOf(_ figure: Int) -> Int {
        guard figure > 0 else { return 0 }
        let part = figure.multipliedReportingOverflow(by: share.local)
        return part.overflow ? figure : max(1, part.partialValue / share.total)
    }

    private func rebuild(now: Int) {
        pub = Self.bucket(pub, shareOf(figures.pub), now: now)
        bytes = Self.bucket(bytes, shareOf(figures.bytes), now: now)
        ops = Self.bucket(ops, shareOf(figures.ops), now: now)
    }

    private static func bucket(_ old: RateBucket?, _ perSecond: Int, now: Int) -> RateBucket? {
        guard perSecond > 0 else { return nil }
        guard var kept = old else { return RateBucket(perSecond: perSecond, now: now) }
        kept.setRate(perSecond, now: now)
        return kept
    }

    /// Charges one line of `count` bytes (its newline included).
    func chargeLine(bytes count: Int, now: Int) {
        Self.take(count, from: &bytes, now: now)
        Self.take(1, from: &ops, now: now)
    }

    /// Charges one `pub`.
    func chargePublish(now: Int) {
        Self.take(1, from: &pub, now: now)
    }

    private static func take(_ tokens: Int, from bucket: inout RateBucket?, now: Int) {
        guard var filled = bucket else { return }
        filled.refill(now: now)
        filled.take(tokens)
        bucket = filled
    }

    /// What `bucket` makes the user wait (ms), after refilling it.
    private static func wait(_ bucket: inout RateBucket?, now: Int) -> Int {
        guard var filled = bucket else { return 0 }
        filled.refill(now: now)
        bucket = filled
        return filled.allows ? 0 : filled.waitMs
    }

    /// Milliseconds the user's connections must wait before their next line (0: go on).
    /// A wait counts toward `heldMs`.
    func waitMs(now: Int) -> Int {
        let wait = max(Self.wait(&pub, now: now), Self.wait(&bytes, now: now), Self.wait(&ops, now: now))
        guard wait > 0 else { return 0 }
        let until = now + wait
        if until > heldUntil {
            heldMs += until - max(now, heldUntil)
            heldUntil = until
        }
        return wait
    }
}
