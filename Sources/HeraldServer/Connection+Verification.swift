import CLibUV
import HeraldBroker
#if canImport(Glibc)
import Glibc
#endif

/// A connection whose `hello` the broker parked: reading stops, the bytes behind the `hello`
/// are held, the token is verified on the thread pool (`TokenVerification`), and back on
/// this loop the verdict is handed to the broker, the held lines are framed as if just read,
/// and reading resumes. The loop serves everyone else meanwhile.
extension Connection {
    /// What a connection does after its lines were framed.
    enum AfterLines {
        /// Keep (or start again) reading.
        case read
        /// A `hello` was parked: verify it off the loop, holding what follows.
        case verify(PendingVerification)
        /// A `hello` waits for another connection's verification of the same token: hold.
        case wait
        /// The broker asked to close: stop reading.
        case stop
        /// This pass's line budget is spent: hold the rest and go on in the next pass.
        case yield
        /// The node's liveness is in doubt: hold everything until the engine knows
        /// (`Connection+Doubt`).
        case doubt
        /// Its user's rate limits say wait this many ms: hold the rest, stop reading
        /// (`Connection+Throttle`).
        case throttle(Int)
        /// Its events put this subscriber past `pace_pending`: hold the rest, stop reading
        /// until it caught up (`PaceKeeper`).
        case pace(Session)
    }

    /// Under the broker lock, after framing: what the connection must do next.
    func nextStep(_ broker: Broker) -> AfterLines {
        if session.closeAfterFlush { return .stop }
        if isHeldForDoubt { return .doubt }
        if let parked = broker.takeVerification(for: session) { return .verify(parked) }
        let heldLeft = heldStart < held.count
        // Behind pipelined state ops (`Broker.mayPipeline`) it reads on: what comes next is
        // framed as it arrives, and held from the first line that may not go on.
        if session.isParked && (heldLeft || !broker.mayPipelineMore(session)) { return .wait }
        let rateWait = rateWaitMs(broker)
        if rateWait > 0 { return .throttle(rateWait) }
        if let behind = broker.takePacingSession() { return .pace(behind) }
        return heldLeft ? .yield : .read
    }

    /// Carries out `nextStep`'s answer, outside the lock.
    func proceed(_ step: AfterLines) {
        guard !isClosing else { return }
        switch step {
        case .read:
            if isHolding {
                isHolding = false
                // Input that ended while lines were held ends now, after them. A connection
                // paused for cluster backpressure reads again when the engine says so.
                if inputHasEnded { handInputEnd() } else if !isBackpressured { startReading() }
            }
        case .verify(let parked):
            hold()
            let job = TokenVerification(parked) { job, cancelled in self.verificationFinished(job, cancelled: cancelled) }
            guard job.start(on: worker.loop) else {
                worker.server.logger.error("cannot queue a token verification; closing", ["client": "c" + String(session.id)])
                close()
                return
            }
        case .wait:
            hold()
        case .yield:
            hold()
            worker.yielded(self)
        case .doubt:
            hold()
            worker.heldForDoubt(self)
        case .throttle(let ms):
            hold()
            worker.throttled.hold(self, ms: ms)
        case .pace(let behind):
            hold()
            worker.pacer.hold(self, for: behind)
        case .stop:
            uv_read_stop(stream)
        }
    }

    func hold() {
        guard !isHolding else { return }
        isHolding = true
        uv_read_stop(stream)
    }

    /// Back on this loop with the verdict: the broker answers the `hello` (and those that
    /// waited for the same token), then the held bytes are framed (they may park another
    /// `hello`), then reading resumes.
    /// - Parameters:
    ///   - job: the finished verification.
    ///   - cancelled: libuv cancelled the work (it is never asked to); the connection closes.
    func verificationFinished(_ job: TokenVerification, cancelled: Bool) {
        guard !cancelled else {
            close()
            return
        }
        let now = worker.now
        let (step, followers) = worker.shared.withLock { broker -> (AfterLines, [Session]) in
            let followers = broker.completeVerification(of: session, accepted: job.accepted, now: now)
            return (isClosing ? .stop : frameHeld(broker, now: now), followers)
        }
        proceed(step)
        for follower in followers { worker.server.resumeHeldLines(of: follower.id) }
    }

    /// On this loop, after another connection's verification answered this one's `hello`.
    func resumeAfterVerdict() {
        guard isHolding, !isClosing else { return }
        let now = worker.now
        let step = worker.shared.withLock(.read) { broker in frameHeld(broker, now: now) }
        proceed(step)
    }

    /// In a later loop pass, after this connection yielded: frames the next budget's worth
    /// of its held lines, then reads again once none are left.
    func resumeAfterYield() {
        guard isHolding, !isClosing, !session.isParked else { return }
        let now = worker.now
        let step = worker.shared.withLock(.read) { broker in frameHeld(broker, now: now) }
        proceed(step)
    }

    /// Under the broker lock: frames the held bytes as if just read.
    func frameHeld(_ broker: Broker, now: Int) -> AfterLines {
        let start = heldStart
        let consumed = held.withUnsafeBytes { all in
            frameLines(UnsafeRawBufferPointer(rebasing: all[start...]), broker: broker, now: now)
        }
        heldStart += consumed
        if heldStart >= held.count {
            held.removeAll(keepingCapacity: held.capacity <= 1 << 16)
            heldStart = 0
        }
        return nextStep(broker)
    }
}
