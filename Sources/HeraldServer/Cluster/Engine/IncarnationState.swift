import HeraldBroker

/// Fail-stop's bookkeeping, pure (no Redis, clock or server; docs/cluster.md, "Failover and
/// fail-stop"): whether the node is between being declared down and joining again, the
/// cluster commands held while its liveness is in doubt, and what a liveness refresh's
/// answer means.
///
/// A node's liveness key lives `node_timeout_ms` from the last refresh Redis applied, and a
/// refresh is applied after it was sent: so the key surely lives until the send time of the
/// last refresh that found it, plus the timeout. Past that (a SIGSTOP, a starved process,
/// a slow link) the node may have been declared down, and it holds what it would send until
/// a refresh says whether the key survived.
struct IncarnationState {
    /// What a refresh's answer means for the node.
    enum Verdict: Equatable {
        /// Nothing changes.
        case none
        /// The key survived and is fresh again: send what was held.
        case release
        /// The key survived, but the answer is too old to clear the doubt: ask again.
        case probeAgain
        /// The key was gone: the node was (or may have been) declared down.
        case reset
    }

    /// Between being declared down and having joined again under a new index.
    private(set) var isResetting = false
    /// Why the last reset began (in the log and the `node_reset` frames).
    private(set) var reason = ""
    /// How many resets this process went through (`/metrics`).
    private(set) var resets = 0
    /// Whether `$sys.node.up` is due once the new incarnation is ready.
    var announcesOnReady = false
    /// Whether this incarnation has not been ready yet (from the start, and from a reset until
    /// the new index is registered and its tables read): it knows no other node then, so a
    /// barrier would wait for nobody, and a `lock` would be answered before any other node
    /// applied it (the chaos run: a lock taken on a node 60 ms before its new incarnation was
    /// ready was listed unlocked on another node). Client lines wait meanwhile.
    private(set) var awaitsFirstReady = true
    /// Commands held while the node's liveness is in doubt, in order.
    private(set) var held: [ClusterCommand] = []
    /// Whether commands are held now.
    private(set) var isHolding = false
    /// When the registration this incarnation's liveness counts from was sent (the join, or a
    /// `rejoin` Redis answered); nil while the links are down or until `rejoin` answers, when
    /// a refresh that finds the key gone says nothing (every key may expire in an outage; the
    /// reaper's `{p}dead` is then the judge).
    private(set) var registeredAt: UInt64?
    /// When the last refresh that found the key (or the registration) was sent.
    private(set) var confirmedAt: UInt64 = 0
    /// Whether the node is registered under its index (refreshes then mean something).
    var isRegistered: Bool { registeredAt != nil }
    /// When joining again may be tried next (after a failed attempt), and the wait after it.
    private(set) var nextJoinAt: UInt64 = 0
    private var joinBackoffNs: UInt64 = 250_000_000

    /// The node registered itself (joined, or `rejoin` said it is still alive): the
    /// registration was sent at `sentAt` and its answer came at `answeredAt`.
    ///
    /// Refreshes count from the answer, not the send: the refresh goes on the control link
    /// and `rejoin` on the command link, so a refresh sent between the two could run in Redis
    /// before the registration and find the key of a node that was only cut off (a Sentinel
    /// move) gone: the chaos run saw every node of the cluster start a new incarnation at once
    /// that way. The key's life counts from the send (it was set no earlier).
    mutating func registered(sentAt: UInt64, answeredAt: UInt64) {
        registeredAt = answeredAt
        confirmedAt = max(confirmedAt, sentAt)
    }

    /// The node registered itself at `time` (a blocking join, whose answer came before).
    mutating func registered(at time: UInt64) {
        registered(sentAt: time, answeredAt: time)
    }

    /// A Redis link went: refreshes mean nothing until the node registers again.
    mutating func linkLost() {
        registeredAt = nil
    }

    /// Whether the node's key may have expired: no refresh sent within the timeout found it.
    func mayHaveLapsed(now: UInt64, timeoutNs: UInt64) -> Bool {
        now &- confirmedAt > timeoutNs
    }

    /// Holds `pass` (after what is held already).
    mutating func hold(_ pass: [ClusterCommand]) {
        held += pass
        isHolding = true
    }

    /// Ends holding and hands back what was held, in order.
    mutating func takeHeld() -> [ClusterCommand] {
        let pass = held
        held = []
        isHolding = false
        return pass
    }

    /// A refresh sent at `sentAt` answered whether the key was still there.
    mutating func refreshAnswered(sentAt: UInt64, present: Bool, now: UInt64, timeoutNs: UInt64) -> Verdict {
        guard let registeredAt, sentAt >= registeredAt, !isResetting else { return .none }
        guard present else { return .reset }
        confirmedAt = max(confirmedAt, sentAt)
        guard isHolding else { return .none }
        return mayHaveLapsed(now: now, timeoutNs: timeoutNs) ? .probeAgain : .release
    }

    /// A reset begins. - Returns: false when one is already under way.
    mutating func beginReset(_ reason: String) -> Bool {
        guard !isResetting else { return false }
        isResetting = true
        awaitsFirstReady = true
        self.reason = reason
        resets += 1
        registeredAt = nil
        nextJoinAt = 0
        joinBackoffNs = 250_000_000
        return true
    }

    /// The incarnation is ready (registered, its tables read): client lines go on.
    mutating func becameReady() {
        awaitsFirstReady = false
    }

    /// Joining again failed at `now`: the next try waits longer (up to 5 s).
    mutating func joinFailed(now: UInt64) {
        nextJoinAt = now &+ joinBackoffNs
        joinBackoffNs = min(joinBackoffNs * 2, 5_000_000_000)
    }

    /// The node joined again (registered at `sentAt`): the reset is over.
    mutating func endReset(registeredAt sentAt: UInt64) {
        isResetting = false
        announcesOnReady = true
        registered(at: sentAt)
    }
}
