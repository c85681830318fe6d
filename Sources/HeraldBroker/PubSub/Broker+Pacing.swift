/// Pacing a fast publisher to its subscribers (`pace_pending`).
///
/// Why: a publisher on a fast link out-runs its subscribers' sockets, and every event it
/// sends past what they take waits in their queues. At 1→100 256 B the queues reached
/// megabytes each: every frame was copied into cold memory, the queues' growth faulted in
/// fresh pages, and `memmove` plus the page faults were a third of the daemon's time
/// (docs/benchmarks.md, "Where mid-size fan-out goes"). nats-server stalls such a producer;
/// here, an event that leaves a subscriber with more than `pace_pending` bytes queued or in
/// flight names that subscriber (`pacingSession`); the server stops framing the
/// publisher's lines after that one, stops reading it, and reads it again once the
/// subscriber's pending bytes fell to half of `pace_pending`, or after at most
/// `Broker.paceLimitMs`. The queues then stay a few hundred KiB, in cache.
///
/// A subscriber that does not read cannot hold publishers back: when a pause runs out of
/// time the subscriber is marked `isPacingExempt` and paces nobody until it wrote its queue
/// down to half; meanwhile `max_pending` and the slow-consumer policy apply as ever. Events
/// from the system, timers and other nodes are never paced (only a connection's lines are).
extension Broker {
    /// Longest pause of a paced publisher, in ms.
    public static let paceLimitMs = 2

    /// After a delivery: names `session` if the event put it past `pace_pending`.
    @inline(__always)
    func notePace(_ session: Session) {
        if session.pendingBytes > config.pacePending && !session.isPacingExempt { pacingSession = session }
    }

    /// Whether a line framed since `clearPacing` put a subscriber past `pace_pending`: asked
    /// by the server after every line. A getter in this module, not a read of
    /// `pacingSession` there: the server's module is built with dynamic exclusivity checks,
    /// and reading the stored property from it cost a `swift_beginAccess` and a retain per
    /// line (callgrind, 1→1 16 B: +80 instructions per delivery; `Session.isRateLimited`
    /// is a getter for the same reason).
    public var isPacing: Bool { pacingSession != nil }

    /// The subscriber the lines framed since the last call put past `pace_pending`, if any;
    /// forgets it.
    /// Counts the pause the server starts for it.
    public func takePacingSession() -> Session? {
        guard let session = pacingSession else { return nil }
        pacingSession = nil
        stats.paced += 1
        return session
    }

    /// Forgets a subscriber named by events that were not a connection's lines.
    public func clearPacing() {
        pacingSession = nil
    }

    /// Whether a publisher paced for `session` may be read again: the subscriber wrote its
    /// queue down to half of `pace_pending`, or is gone or closing.
    public func paceIsOver(for session: Session) -> Bool {
        session.isDisconnected || session.closeAfterFlush || session.pendingBytes <= config.pacePending / 2
    }

    /// A pause for `session` ran out of time: it does not read, so it paces nobody until
    /// `wrotePaced` sees its queue at half.
    public func paceTimedOut(for session: Session) {
        session.isPacingExempt = true
        stats.paceTimeouts += 1
    }

    /// After a write to `session`: an exempt subscriber that caught up paces again.
    @inline(__always)
    public func wrotePaced(_ session: Session) {
        if session.isPacingExempt && session.pendingBytes <= config.pacePending / 2 { session.isPacingExempt = false }
    }
}
