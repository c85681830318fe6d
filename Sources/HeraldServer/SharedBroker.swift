import CLibUV
import HeraldBroker
#if canImport(Glibc)
import Glibc
#endif

/// The broker and the one lock that every loop takes to use it.
///
/// The broker is a single-threaded state machine; with several loops (`workers`) each loop
/// takes this lock around its calls: once per read (all the lines of that read), once per
/// flush pass, once per timer tick. Socket reads and writes happen outside the lock, so
/// loops overlap their system calls while the broker's work is serialised.
/// Lock order: this lock before a worker's inbox lock, never the other way round.
///
/// With more than one loop it also measures, per `LockSite`, how often the lock was taken,
/// how long the taker waited for it and how long it was held (`/varz` and `/metrics`,
/// `broker_lock_*`): what limits a second loop (docs/architecture.md, "Threads and loops").
/// One loop measures nothing and pays nothing for it.
final class SharedBroker: @unchecked Sendable {
    /// Who takes the lock, for the measurements.
    enum LockSite: Int, CaseIterable {
        /// A connection's read callback: every line of one read (or of the bytes it held
        /// after yielding its pass budget, a rate wait or a token check).
        case read
        /// A loop's flush pass (the dirty list, teardown slices, inbox flushes).
        case flush
        /// Accounting for the writes of a pass, or one write callback.
        case writes
        /// The main loop's timer: heartbeats and deadlines.
        case tick
        /// Everything else (accepts, closes, monitor snapshots, reloads, persistence).
        case other

        /// The name in the figures (`broker_lock_<name>_…`).
        var name: String {
            switch self {
            case .read: "read"
            case .flush: "flush"
            case .writes: "writes"
            case .tick: "tick"
            case .other: "other"
            }
        }
    }

    /// One site's measurements (guarded by the lock).
    private struct Tally {
        var takes = 0
        var waitNs: UInt64 = 0
        var heldNs: UInt64 = 0
    }

    private let broker: Broker
    /// Hand-off writes left uncounted by loops that found the lock taken; the holder counts
    /// them before it lets go (more than one loop only).
    let settlements = HandoffSettlements()
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    /// Whether the lock is measured (more than one loop).
    private let measures: Bool
    private let tallies: UnsafeMutablePointer<Tally>

    /// - Parameter measured: whether to measure the lock (set with more than one loop).
    init(_ broker: Broker, measured: Bool = false) {
        self.broker = broker
        measures = measured
        tallies = .allocate(capacity: LockSite.allCases.count)
        tallies.initialize(repeating: Tally(), count: LockSite.allCases.count)
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
        tallies.deinitialize(count: LockSite.allCases.count)
        tallies.deallocate()
    }

    /// Runs `body` with exclusive use of the broker; `site` names the caller for the
    /// measurements.
    func withLock<R>(_ site: LockSite, _ body: (Broker) throws -> R) rethrows -> R {
        guard measures else {
            pthread_mutex_lock(mutex)
            defer { pthread_mutex_unlock(mutex) }
            return try body(broker)
        }
        let asked = uv_hrtime()
        pthread_mutex_lock(mutex)
        let got = uv_hrtime()
        defer {
            settlements.settleIfAny(broker)
            let tally = tallies + site.rawValue
            tally.pointee.takes += 1
            tally.pointee.waitNs &+= got &- asked
            tally.pointee.heldNs &+= uv_hrtime() &- got
            pthread_mutex_unlock(mutex)
        }
        return try body(broker)
    }

    /// From a loop that found the lock taken: leaves its boxes' uncounted writes to be
    /// counted by the holder before it lets go, or counts them now if the lock came free
    /// meanwhile (the holder may have looked before they were left).
    func leave(_ boxes: inout [OutputHandoff]) {
        settlements.leave(&boxes)
        _ = withLockIfFree(.flush) { _ in }
    }

    /// Runs `body` with exclusive use of the broker if the lock is free now, measured as
    /// `site` (a take without a wait).
    /// - Returns: what `body` returned, or nil when another thread held the lock.
    func withLockIfFree<R>(_ site: LockSite, _ body: (Broker) throws -> R) rethrows -> R? {
        guard pthread_mutex_trylock(mutex) == 0 else { return nil }
        guard measures else {
            defer { pthread_mutex_unlock(mutex) }
            return try body(broker)
        }
        let got = uv_hrtime()
        defer {
            settlements.settleIfAny(broker)
            let tally = tallies + site.rawValue
            tally.pointee.takes += 1
            tally.pointee.heldNs &+= uv_hrtime() &- got
            pthread_mutex_unlock(mutex)
        }
        return try body(broker)
    }

    /// `withLock` when `wait`, else `withLockIfFree`.
    /// - Returns: whether `body` ran.
    func withLock(_ site: LockSite, waiting wait: Bool, _ body: (Broker) throws -> Void) rethrows -> Bool {
        guard wait else { return try withLockIfFree(site, body) != nil }
        try withLock(site, body)
        return true
    }

    /// Runs `body` with exclusive use of the broker, measured as `LockSite.other`.
    func withLock<R>(_ body: (Broker) throws -> R) rethrows -> R {
        try withLock(.other, body)
    }

    /// Under the lock (inside `withLock`): the measurements as figures, per site
    /// `broker_lock_<site>_takes`, `…_wait_us`, `…_held_us`; none with one loop.
    func lockFigures() -> [StatsFigure] {
        guard measures else { return [] }
        return LockSite.allCases.flatMap { site -> [StatsFigure] in
            let tally = tallies[site.rawValue]
            let name = "broker_lock_" + site.name
            return [StatsFigure(name + "_takes", tally.takes),
                    StatsFigure(name + "_wait_us", Int(tally.waitNs / 1_000)),
                    StatsFigure(name + "_held_us", Int(tally.heldNs / 1_000))]
        }
    }
}
