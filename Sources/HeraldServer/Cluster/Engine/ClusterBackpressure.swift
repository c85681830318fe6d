import Synchronization

/// Whether the node's cluster work is over its bound, shared by every loop (docs/cluster.md,
/// "Backpressure and the control link").
///
/// The engine lives on the main loop and knows what the command link has outstanding; the
/// connections that feed it live on every loop, and only their own loop may stop or start
/// reading them. So the decision travels as one flag: set by the engine when the command
/// link is over `max_outstanding_ops` or `max_outstanding_bytes` (or by a loop whose events
/// waiting for the engine are over the byte bound), read by each loop at the end of its pass
/// to pause the connections that queued cluster work in it, and cleared by the engine once
/// the outstanding amount fell to half, when it also tells every loop to resume
/// (`Worker.Message.resumeReading`).
final class ClusterBackpressure: Sendable {
    /// `cluster.max_outstanding_ops`: commands on the command link not yet answered.
    let maxOps: Int
    /// `cluster.max_outstanding_bytes`: their bytes, and the bytes of events a loop queued
    /// for the engine and it has not taken yet.
    let maxBytes: Int
    private let congested = Atomic<Bool>(false)
    private let paused = Atomic<Int>(0)
    private let sent = Atomic<Int>(0)

    /// The bounds from the `cluster` section.
    init(settings: ClusterSettings) {
        maxOps = settings.maxOutstandingOps
        maxBytes = settings.maxOutstandingBytes
    }

    /// Whether the loops should pause the connections that queue cluster work.
    var isCongested: Bool { congested.load(ordering: .acquiring) }

    /// Sets the flag. - Returns: whether it was clear.
    @discardableResult
    func congest() -> Bool {
        !congested.exchange(true, ordering: .acquiringAndReleasing)
    }

    /// Clears the flag (the engine then tells every loop to resume).
    func relieve() {
        congested.store(false, ordering: .releasing)
    }

    /// The command link's outstanding bytes as the engine last saw them (once per main-loop
    /// pass): a loop adds what waits for the engine to it, so the two together stay bounded.
    var sentBytes: Int { sent.load(ordering: .relaxed) }

    /// The engine's figure for `sentBytes`.
    func noteSent(_ bytes: Int) {
        sent.store(bytes, ordering: .relaxed)
    }

    /// Connections not read now for backpressure, over every loop (a monitor figure).
    var pausedConnections: Int { paused.load(ordering: .relaxed) }

    /// A loop paused (`count` > 0) or resumed or closed (`count` < 0) that many connections.
    func countPaused(_ count: Int) {
        paused.add(count, ordering: .relaxed)
    }
}
