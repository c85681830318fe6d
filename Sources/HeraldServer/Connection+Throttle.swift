import CLibUV
import HeraldBroker

/// Rate limits, a connection's side (docs/protocol.md, "Rate limits"; `Broker+Rates`): when
/// its user's buckets are empty the connection stops before its next line, holds what it
/// read, stops reading and waits on its loop's `ThrottleKeeper`; then it frames the held
/// lines and reads again. Nothing is refused or dropped: the client's bytes wait in the
/// socket and TCP slows it down. While it waits its silence is no heartbeat timeout.
extension Connection {
    /// Under the broker lock, after a line: whether its user's rates say wait.
    func mustWaitForRate(_ broker: Broker, now: Int) -> Bool {
        session.isRateLimited && broker.rateWait(for: session, now: now) > 0
    }

    /// Under the broker lock, after framing: how long to wait, or 0.
    func rateWaitMs(_ broker: Broker) -> Int {
        guard session.isRateLimited else { return 0 }
        let wait = broker.rateWait(for: session, now: worker.now)
        if wait > 0 { session.isReadPaused = true }
        return wait
    }

    /// The wait is over: frames the held lines (which may wait again), then reads.
    func resumeAfterThrottle() {
        guard isHolding, !isClosing, !session.isParked else { return }
        let now = worker.now
        let step = worker.shared.withLock(.read) { broker -> AfterLines in
            if !isBackpressured {
                session.isReadPaused = false
                broker.heard(from: session, now: now)
            }
            return frameHeld(broker, now: now)
        }
        proceed(step)
    }
}
