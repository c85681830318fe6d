import Foundation

/// The I/O thread: connecting, the handshake, reading and writing, timers, reconnecting.
extension HeraldClient {
    /// Starts the I/O thread; it holds the client weakly and re-acquires it for each step.
    func startThread() {
        let loop = self.loop
        loop.phase = .connect(attempt: 0)
        let thread = Thread { [weak self] in
            while true {
                guard let client = self else { break }
                if !client.step() { break }
            }
            loop.dropSocket()
        }
        thread.name = "herald-io"
        thread.start()
    }

    /// One step of the loop, at most ~200 ms; false ends the thread.
    func step() -> Bool {
        if loop.stopRequested {
            shutdownLoop()
            return false
        }
        if suspensionStep() { return true }
        switch loop.phase {
        case .stopped:
            return false
        case .suspended:
            // Resumed: a reconnect like any other (restore, `since` catch-up), without backoff.
            loop.phase = .connect(attempt: 1)
        case .connect(let attempt):
            connectStep(attempt: attempt)
        case .backoff(let until, let attempt):
            let now = IOLoop.now
            if state.withLock({ !$0.everConnected && !$0.retryFirstConnect }) {
                // Every `connect(waitsForConnectivity:)` caller was cancelled: stop trying.
                connectionEnded(.failure("connect cancelled"), failedAttempt: attempt)
            } else if loop.takePathReturned() {
                // The network is back: no reason to wait out the rest of the backoff.
                loop.phase = .connect(attempt: attempt)
            } else if !loop.isPathSatisfied {
                // No network: attempts cannot succeed; wait for the path, not for a timer.
                notify(state.withLock { $0.transition(to: .waitingForNetwork) }, of: .waitingForNetwork)
                waitForWake(milliseconds: 200)
            } else if now >= until {
                loop.phase = .connect(attempt: attempt)
            } else {
                waitForWake(milliseconds: Int(min(200, (until - now) / 1_000_000 + 1)))
            }
        case .handshake(let deadline):
            if IOLoop.now > deadline {
                lose(.failure("handshake timed out"))
            } else {
                pump()
            }
        case .running:
            if loop.takeBetterPath() {
                moveToBetterPath()
                return true
            }
            if loop.takeProbe() { loop.backlog.append(contentsOf: FrameWriter(op: "ping").finished()) }
            pump()
            if case .running = loop.phase { runTimers() }
        }
        return true
    }

    /// A better network path is available (Wi-Fi after cellular): the connection moves to it
    /// at once, as a reconnect (restore, `since` catch-up), without backoff.
    private func moveToBetterPath() {
        lose(.failure("moving to a better network path"))
        if case .backoff(_, let attempt) = loop.phase { loop.phase = .connect(attempt: attempt) }
    }

    private func waitForWake(milliseconds: Int) {
        loop.wakeSignal.wait(milliseconds: milliseconds)
    }

    private func connectStep(attempt: Int) {
        notify(state.withLock { $0.transition(to: attempt == 0 ? .connecting : .reconnecting(attempt: attempt)) },
               of: attempt == 0 ? .connecting : .reconnecting(attempt: attempt))
        loop.wakeSignal.drain()
        do {
            let endpoints = configuration.endpoints
            let socket = try PlatformTransport.connect(to: endpoints[loop.endpointIndex % endpoints.count], tls: configuration.tls,
                                                       timeout: configuration.connectTimeout, wake: loop.wakeSignal) { [weak loop] news in
                loop?.pathChanged(news)
            }
            loop.socket = socket
            loop.attempt = attempt
            loop.lastHeard = IOLoop.now
            loop.phase = .handshake(deadline: IOLoop.now + UInt64(configuration.connectTimeout * 1e9))
        } catch {
            if loop.stopRequested { return }
            connectionEnded(.failure(error.reason), failedAttempt: attempt)
        }
    }

    /// Writes pending bytes, waits up to 200 ms for input, reads it.
    private func pump() {
        let limit = configuration.maxOutboundBytes
        let backlog = loop.backlog.count - loop.backlogOffset
        let (outbound, roomWaiters) = state.withLock { state in
            defer { state.outbound = [] }
            // The bytes the last pass could not write, for `post`'s bound: it is soft by what
            // callers queue between two passes.
            state.writerBacklog = backlog + state.outbound.count
            var waiters: [CheckedContinuation<Result<Void, HeraldClientError>, Never>] = []
            if !state.roomWaiters.isEmpty, state.writerBacklog <= limit {
                waiters = Array(state.roomWaiters.values)
                state.roomWaiters = [:]
            }
            return (state.outbound, waiters)
        }
        for waiter in roomWaiters { waiter.resume(returning: .success(())) }
        loop.backlog.append(contentsOf: outbound)
        do {
            try loop.flush()
        } catch {
            lose(.failure(error.reason))
            return
        }
        guard let socket = loop.socket else { return }
        // TLS may hold decrypted bytes the socket no longer signals: read them without waiting.
        let buffered = socket.hasBufferedInput
        let readable = socket.wait(milliseconds: buffered ? 0 : 200, writable: loop.hasBacklog, wake: loop.wakeSignal)
        if buffered || readable { readAvailable(socket) }
    }

    private func readAvailable(_ socket: PlatformTransport) {
        for _ in 0..<16 {
            let count: Int
            do {
                count = try socket.read(into: &loop.readBuffer)
            } catch {
                lose(.failure(error.reason))
                return
            }
            if count < 0 { return }
            if count == 0 {
                lose(loop.closingErrorCode.map { .serverError(code: $0) } ?? .closedByServer)
                return
            }
            loop.lastHeard = IOLoop.now
            loop.pingSent = false
            // Event lines are read as the framer finds them, from the read buffer itself (no
            // copy of the line), and routed together after the feed. Any other line may end the
            // link or reset the framer, so it is copied and handled after those events, and so
            // is every line after it (order kept).
            var events: [IncomingEvent] = []
            // One allocation for the read's events (a daemon event line is at least ~40 bytes),
            // not the ten or so of growing by doubling to a few hundred.
            events.reserveCapacity(count / 40 + 1)
            var lines: [[UInt8]] = []
            var overlong = 0
            // A local copy for the read: the loop's property, a class's, was checked for
            // exclusive access on every event.
            var strings = loop.recentStrings
            defer { loop.recentStrings = strings }
            loop.readBuffer.withUnsafeBytes { raw in
                loop.framer.feed(UnsafeRawBufferPointer(rebasing: raw[0..<count])) { framed in
                    switch framed {
                    case .line(let line):
                        if lines.isEmpty, let event = incomingEvent(line: line, strings: &strings) {
                            events.append(event)
                        } else {
                            lines.append(Array(line))
                        }
                    case .tooLong(let length): overlong = length
                    }
                }
            }
            if overlong > 0 { report(.malformedFrame("line of \(overlong)+ bytes exceeds maxLine")) }
            if !events.isEmpty { route(events) }
            for line in lines {
                guard loop.socket != nil else { break }
                handleLine(line)
            }
            loop.deliveries.flush()
            guard loop.socket != nil else { return }
        }
    }

    /// Request timeouts, heartbeats, and the sweep of subscriptions whose owner is gone.
    private func runTimers() {
        let now = IOLoop.now
        let expired = state.withLock { state -> [PendingAnswer] in
            let rids = state.pending.filter { ($0.value.deadline ?? .max) < now }.map(\.key)
            return rids.compactMap { state.pending.removeValue(forKey: $0) }
        }
        for entry in expired { entry.complete(.failure(.timeout)) }

        let heartbeat = UInt64(max(0, state.withLock { $0.info?.heartbeatMs } ?? 0)) * 1_000_000
        if heartbeat > 0 {
            let silence = now &- loop.lastHeard
            if silence > 3 * heartbeat {
                lose(.heartbeatTimeout)
                return
            }
            if silence > 2 * heartbeat, !loop.pingSent {
                loop.pingSent = true
                loop.backlog.append(contentsOf: FrameWriter(op: "ping").finished())
            }
        }
        if now &- loop.lastSweep > 1_000_000_000 {
            loop.lastSweep = now
            sweepDeadOwners()
        }
    }

    /// The link is gone: fail what waited for it, then reconnect or stop.
    func lose(_ reason: DisconnectReason) {
        tearDown()
        connectionEnded(reason, failedAttempt: loop.attempt)
    }

    /// Closes the link and fails what waited for an answer on it; what the client holds stays
    /// to be restored on the next connection.
    private func tearDown() {
        // Events read before the loss still reach their handlers, before anything ends.
        loop.deliveries.flush()
        loop.dropSocket()
        let (pending, roomWaiters) = state.withLock { state in
            state.linkUp = false
            state.outbound = []
            state.writerBacklog = 0
            state.unrestored = []
            if let epoch = state.info?.epoch { state.previousEpoch = epoch }
            for name in state.subscriptions.keys { state.subscriptions[name]?.acked = false }
            state.abandoned = []
            defer {
                state.pending = [:]
                state.roomWaiters = [:]
            }
            return (Array(state.pending.values), Array(state.roomWaiters.values))
        }
        for entry in pending { entry.complete(.failure(.disconnected)) }
        // No link, no queue to wait for: a `post` now throws `.notConnected` (or is kept).
        for waiter in roomWaiters { waiter.resume(returning: .success(())) }
    }

    /// Suspends or resumes as the app asked (`suspend()`/`resume()`).
    /// - Returns: true while suspended (the step is done: it waited for news).
    private func suspensionStep() -> Bool {
        guard loop.suspendRequested else { return false }
        switch loop.phase {
        case .stopped:
            return false
        case .suspended:
            break
        default:
            flushBacklog(seconds: 0.5)
            tearDown()
            loop.phase = .suspended
            loop.attempt = 0
            notify(state.withLock { $0.transition(to: .suspended) }, of: .suspended)
        }
        waitForWake(milliseconds: 200)
        return true
    }

    /// After a failed attempt or a lost link: give up (first connection, policy) or back off.
    private func connectionEnded(_ reason: DisconnectReason, failedAttempt: Int) {
        let policy = configuration.reconnect
        let next = failedAttempt + 1
        let (observers, waiters, giveUp) = state.withLock { state in
            let observers = state.transition(to: .disconnected(reason))
            let giveUp = state.closed || (!state.everConnected && !state.retryFirstConnect) || reason.isAuthRejection
                || (policy.maxAttempts.map { next > $0 } ?? false)
            var waiters: [CheckedContinuation<Result<Void, HeraldClientError>, Never>] = []
            if giveUp {
                state.threadRunning = false
                state.retryFirstConnect = false
                waiters = Array(state.connectWaiters.values)
                state.connectWaiters = [:]
            }
            return (observers, waiters, giveUp)
        }
        notify(observers, of: .disconnected(reason))
        for waiter in waiters { waiter.resume(returning: .failure(.connectionFailed(reason.description))) }
        if giveUp {
            loop.phase = .stopped
        } else {
            loop.endpointIndex &+= 1
            loop.phase = .backoff(until: IOLoop.now + UInt64(policy.delay(attempt: next) * 1e9), attempt: next)
        }
    }

    /// Stop requested: write what was queued (up to a second), then close.
    private func shutdownLoop() {
        flushBacklog(seconds: 1)
        loop.dropSocket()
        loop.phase = .stopped
        state.withLock { $0.threadRunning = false }
    }

    /// Writes the backlog (and what callers queued) for up to `seconds`, before a close.
    private func flushBacklog(seconds: Double) {
        let outbound = state.withLock { state -> [UInt8] in
            defer { state.outbound = [] }
            return state.outbound
        }
        loop.backlog.append(contentsOf: outbound)
        let deadline = IOLoop.now + UInt64(seconds * 1e9)
        while let socket = loop.socket, loop.hasBacklog, IOLoop.now < deadline {
            do { try loop.flush() } catch { break }
            if loop.hasBacklog { _ = socket.wait(milliseconds: 50, writable: true, wake: loop.wakeSignal) }
        }
    }

    /// Tells state observers about a change (outside the lock).
    func notify(_ observers: [AsyncStream<ConnectionState>.Continuation], of newState: ConnectionState) {
        for observer in observers { observer.yield(newState) }
    }
}
