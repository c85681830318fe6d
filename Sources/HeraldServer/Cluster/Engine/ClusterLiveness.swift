import Synchronization

/// Until when this node surely counts as alive in the cluster, shared by every loop
/// (docs/cluster.md, "Failover and fail-stop").
///
/// A node's liveness key lives `node_timeout_ms` from the last refresh Redis applied. Past
/// that time (a SIGSTOP, a starved process, a slow link) the others may have declared the
/// node down and handed its locks and instance channels to someone else, so nothing it
/// answers a client can be trusted: a `remove` or `unlock` answered `ok` from its own
/// tables would tell a holder it held until then (the chaos run: an instance channel's
/// `remove` answered `count:1` 5 ms before the node found itself declared down, while
/// another node's client had owned the channel for 2 s). So the loops stop framing client
/// lines while the node is in doubt: a connection's bytes are held and its reads stop, the
/// way a held `hello` holds them (`Connection+Doubt`), until the engine's next refresh says
/// which it is: the key survived (the lines are framed, nothing was lost but a round trip)
/// or it is gone (every client is closed with `node_reset` before any of them is answered).
///
/// The engine writes the deadline after every confirmed refresh and registration; the
/// loops read it once per read, against their own clock (`uv_now`, the same monotonic
/// clock in milliseconds).
final class ClusterLiveness: Sendable {
    /// Loop time (ms) until which the node surely lives; 0 while it starts a new incarnation
    /// or until it is first ready.
    private let deadline = Atomic<Int>(Int.max)
    private let cutOff = Atomic<Bool>(false)
    private let held = Atomic<Int>(0)
    private let probeAsked = Atomic<Bool>(false)

    /// A new shared deadline (none yet).
    init() {}

    /// Whether a loop whose clock reads `nowMs` must hold client lines.
    func isInDoubt(nowMs: Int) -> Bool {
        nowMs > deadline.load(ordering: .acquiring)
    }

    /// Whether the node's links to Redis are down (it is not registered): past the deadline
    /// only the connections holding locks or instance channels wait then (the others are
    /// served as in any outage, their cluster ops refused `unavailable`).
    var isCutOff: Bool { cutOff.load(ordering: .acquiring) }

    /// The engine's new deadline (loop time, ms), and whether the links are down.
    /// - Returns: whether the links just went down (the held connections that hold nothing
    ///   may then go on).
    @discardableResult
    func setDeadline(_ ms: Int, cutOff isCutOff: Bool) -> Bool {
        let was = cutOff.exchange(isCutOff, ordering: .acquiringAndReleasing)
        deadline.store(ms, ordering: .releasing)
        return isCutOff && !was
    }

    /// Connections held for the doubt, over every loop.
    var heldConnections: Int { held.load(ordering: .acquiring) }

    /// A loop held (`count` > 0) or let go of (`count` < 0) that many connections.
    func countHeld(_ count: Int) {
        held.add(count, ordering: .acquiringAndReleasing)
    }

    /// A loop held a connection: whether it is the first to ask the engine to look since the
    /// engine last looked (the caller then wakes the main loop; the others need not).
    func askProbe() -> Bool {
        !probeAsked.exchange(true, ordering: .acquiringAndReleasing)
    }

    /// The engine looked: the next held connection asks again.
    func probeTaken() {
        probeAsked.store(false, ordering: .releasing)
    }
}
