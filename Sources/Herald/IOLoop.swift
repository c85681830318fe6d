import Dispatch
import HeraldWire
import Synchronization

/// The I/O thread's own state: the transport, framing, write backlog, and the reconnect phase.
///
/// Shared by every platform: it knows the transport only through `Transport` and the wake-up
/// only through `TransportWake` (see `PlatformTransport`).
///
/// Only the I/O thread touches the `var`s (hence `@unchecked Sendable`); other threads use only
/// `wake()` and `requestStop()`, which are thread-safe.
final class IOLoop: @unchecked Sendable {
    enum Phase {
        /// About to connect; `attempt` 0 is the first connection, 1… are reconnects.
        case connect(attempt: Int)
        /// Socket up, waiting for `info` and the `hello` answer until `deadline`.
        case handshake(deadline: UInt64)
        /// Link up.
        case running
        /// Waiting before reconnect attempt `attempt` (and, while the network path is
        /// unsatisfied, until it is satisfied again).
        case backoff(until: UInt64, attempt: Int)
        /// The app suspended the client (`HeraldClient.suspend()`): no connection until `resume()`.
        case suspended
        /// Done: the thread exits.
        case stopped
    }

    let wakeSignal = PlatformWake()
    private let stopFlag = Atomic<Bool>(false)
    /// The app asked for `suspend()` and has not called `resume()` since.
    private let suspendFlag = Atomic<Bool>(false)
    /// The network path as the monitor last reported it (true until it says otherwise).
    private let pathSatisfied = Atomic<Bool>(true)
    /// The path went from unsatisfied to satisfied: a waiting reconnect goes at once.
    private let pathReturned = Atomic<Bool>(false)
    /// A better path is available: the running connection moves to it.
    private let betterPath = Atomic<Bool>(false)
    /// The connection became viable again: ping at once to learn whether it survived.
    private let probeWanted = Atomic<Bool>(false)
    var phase: Phase = .connect(attempt: 0)
    var socket: PlatformTransport? {
        didSet {
            let cut = socket?.cutter
            activeCutter.withLock { $0 = cut }
        }
    }
    /// Cuts the current transport, for other threads (tests cut the connection with it).
    private let activeCutter = Mutex<(@Sendable () -> Void)?>(nil)
    var framer: LineFramer
    /// Events read but not yet handed to their handlers' queues (see `DeliveryBatch`).
    var deliveries = DeliveryBatch()
    var backlog: [UInt8] = []
    var backlogOffset = 0
    var readBuffer = [UInt8](repeating: 0, count: 65536)
    /// The last event's channel, subscription and sender strings (`IncomingEvent`).
    var recentStrings = RecentStrings()
    /// Monotonic ns of the last byte from the daemon.
    var lastHeard: UInt64 = 0
    var pingSent = false
    var lastSweep: UInt64 = 0
    /// The code of an error frame just before the daemon closed, as the disconnect reason.
    var closingErrorCode: String?
    /// The attempt number of the connection being set up (0 for the first).
    var attempt = 0
    /// Which of the configuration's `endpoints` the next attempt uses (modulo their count):
    /// it moves on after every failed attempt or lost connection.
    var endpointIndex = 0

    init(maxLine: Int) {
        framer = LineFramer(maxLine: maxLine)
    }

    /// Makes a blocked `poll` return.
    func wake() { wakeSignal.wake() }

    /// Asks the thread to flush and exit.
    func requestStop() {
        stopFlag.store(true, ordering: .releasing)
        wakeSignal.wake()
    }

    var stopRequested: Bool { stopFlag.load(ordering: .acquiring) }

    /// Takes news from the path monitor or the transport (any thread).
    ///
    /// It does not wake the thread: a wake-up aborts a connect attempt under way (it means
    /// "closing" there), and the monitor's first report or a viability change may come during
    /// one. The loop reads the flags at its next tick, within 200 ms, in every phase.
    func pathChanged(_ news: PathNews) {
        switch news {
        case .satisfied:
            let was = pathSatisfied.exchange(true, ordering: .acquiringAndReleasing)
            if !was { pathReturned.store(true, ordering: .releasing) }
        case .unsatisfied:
            pathSatisfied.store(false, ordering: .releasing)
        case .betterPathAvailable:
            betterPath.store(true, ordering: .releasing)
        case .viable(let viable):
            if viable { probeWanted.store(true, ordering: .releasing) }
        }
    }

    /// Whether the network path is usable, as far as the monitor knows.
    var isPathSatisfied: Bool { pathSatisfied.load(ordering: .acquiring) }

    /// Whether the path came back since the last call (consumes the news).
    func takePathReturned() -> Bool { pathReturned.exchange(false, ordering: .acquiringAndReleasing) }

    /// Whether a better path was announced since the last call (consumes the news).
    func takeBetterPath() -> Bool { betterPath.exchange(false, ordering: .acquiringAndReleasing) }

    /// Whether the connection became viable again since the last call (consumes the news).
    func takeProbe() -> Bool { probeWanted.exchange(false, ordering: .acquiringAndReleasing) }

    /// Sets or clears the app's suspension and wakes the loop.
    func setSuspended(_ suspended: Bool) {
        suspendFlag.store(suspended, ordering: .releasing)
        wakeSignal.wake()
    }

    /// Whether the app has the client suspended.
    var suspendRequested: Bool { suspendFlag.load(ordering: .acquiring) }

    /// Cuts the connection as a network failure would (the I/O thread sees the stream end and
    /// reconnects); for tests of the same-daemon reconnect path.
    func cutConnection() {
        let cut = activeCutter.withLock { $0 }
        cut?()
    }

    /// Closes the socket and forgets buffered bytes.
    func dropSocket() {
        socket?.close()
        socket = nil
        backlog = []
        backlogOffset = 0
        framer = LineFramer(maxLine: framer.maxLine)
        pingSent = false
        closingErrorCode = nil
    }

    /// Writes what the kernel takes of the backlog (and of TLS records sealed from it).
    func flush() throws(HeraldClientError) {
        guard let socket else { return }
        if socket.hasPendingOutput { try socket.flushPending() }
        guard backlogOffset < backlog.count else { return }
        while backlogOffset < backlog.count {
            let written = try socket.write(backlog, from: backlogOffset)
            if written == 0 { break }
            backlogOffset += written
        }
        if backlogOffset == backlog.count {
            backlog.removeAll(keepingCapacity: backlog.count < 1 << 20)
            backlogOffset = 0
        }
    }

    /// Whether bytes wait to be written: backlog, or TLS records the kernel has not taken yet.
    var hasBacklog: Bool { backlogOffset < backlog.count || (socket?.hasPendingOutput ?? false) }

    static var now: UInt64 { DispatchTime.now().uptimeNanoseconds }
}
