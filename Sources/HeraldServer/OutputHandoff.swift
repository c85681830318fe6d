import HeraldBroker
import Synchronization

/// Bytes a loop took from a session under the broker lock for a plain connection of another
/// loop, which writes them without taking that lock (`workers` above 1; `Worker+Handoff`).
///
/// Why: with one broker lock, a loop that only writes (its connections subscribe, another
/// loop reads the publisher) had to take the lock to get its connections' bytes and again to
/// count each write, and waited for it about 1.4 ms a time at 1→1 while the reading loop held
/// it for whole reads (docs/architecture.md, "Threads and loops"). Now the loop that drains
/// the dirty list moves the bytes here, the writing loop takes them under this box's lock
/// only, and whoever holds the broker lock next counts the writes (`written`).
///
/// `bytes`, `spare` and `isAwaited` are guarded by the connection's worker's inbox lock.
final class OutputHandoff: @unchecked Sendable {
    /// The session whose bytes these are; `settle` counts its writes.
    let session: Session
    /// Bytes handed over and not yet taken by the connection, oldest first. They count in
    /// the session's `inFlight` from the moment they are moved here.
    var bytes: [UInt8] = []
    /// Frames in the broker's `FrameArena` handed over behind `bytes` (`Connection+Spans`),
    /// and that arena; the box holds the list until its connection takes it.
    var spans: [FrameSpan] = []
    var arena: FrameArena?
    /// A buffer kept for a hand-off that finds `bytes` not yet taken (the new bytes are
    /// appended from it), so neither side allocates in steady traffic.
    var spare: [UInt8] = []
    /// Whether the connection's loop will look at the box without another message: a
    /// `.handoff` is on its way, or a write is out and its completion looks.
    var isAwaited = false
    /// Bytes the connection wrote without the broker lock and nobody counted yet.
    let written = Atomic<Int>(0)
    /// Whether the box waits on a list for `settle` (its loop's `unsettled`, or the server's
    /// `HandoffSettlements`); touched by its connection's loop only.
    var isListed = false

    init(session: Session) {
        self.session = session
    }

    deinit { dropSpans() }

    /// Copies the spans behind `bytes` and lets the arena go (more bytes must follow them).
    func flattenSpans() {
        guard let arena, !spans.isEmpty else { return }
        for span in spans { bytes.append(contentsOf: arena.bytes(span)) }
        dropSpans()
    }

    /// Forgets the spans (the connection is gone) and lets the arena go.
    func dropSpans() {
        guard !spans.isEmpty else { return }
        spans.removeAll()
        arena?.release()
    }

    /// Under the broker lock, on any loop: counts the writes made since the last time
    /// (bytes out, and the session's `inFlight`).
    func settle(_ broker: Broker) {
        let count = written.exchange(0, ordering: .acquiring)
        guard count > 0 else { return }
        broker.stats.bytesOut += count
        session.inFlight -= count
    }
}
