import HeraldBroker
import HeraldWire

/// Parked `hello`s (pbkdf2 users): the harness plays the server's thread pool.
///
/// The broker parks a `hello` whose token only a slow credential can judge; the server takes
/// the verification, holds the connection's further bytes, derives the key off the loop and
/// hands the verdict back with `completeVerification`, then frames the held bytes. Here the
/// derivation is `derive` and the completion happens at once, unless directive 0x0B holds
/// verifications (so a second `hello` with the same token follows the first one's), or the
/// connection hangs up meanwhile (the verdict still counts against its address).
extension FuzzSession {
    /// Takes the verification the broker parked for `session`, if any, as the server does
    /// after framing a read.
    mutating func takeVerification(of session: Session) {
        if let pending = broker.takeVerification(for: session) { parked.append((session, pending)) }
    }

    /// Completes every parked verification unless directive 0x0B holds them.
    mutating func completeVerificationsUnlessDeferred() {
        if !defersVerifications { completeVerifications() }
    }

    /// Completes parked verifications oldest first, resuming each answered connection's
    /// held lines (which may park another `hello`, completed in turn).
    mutating func completeVerifications() {
        while !parked.isEmpty {
            let (session, pending) = parked.removeFirst()
            let accepted = pending.verify(derive: Self.derive)
            let followers = broker.completeVerification(of: session, accepted: accepted, now: now)
            resumeHeldLines(of: session)
            for follower in followers { resumeHeldLines(of: follower) }
        }
    }

    /// Frames a connection's held lines as if just read, stopping at the next parked `hello`
    /// (the rest stays held); nothing when it has gone or is closing.
    mutating func resumeHeldLines(of session: Session) {
        guard let slot = slots.firstIndex(where: { $0 === session }) else { return }
        while !held[slot].isEmpty, slots[slot] === session, !session.closeAfterFlush, !session.awaitsVerification {
            let line = held[slot].removeFirst()
            switch line {
            case .line(let bytes):
                bytes.withUnsafeBytes { request($0, from: session) }
            case .tooLong(let length):
                broker.lineTooLong(from: session, length: length, now: now)
            }
        }
        if slots[slot] !== session || session.closeAfterFlush { held[slot] = [] }
    }
}
