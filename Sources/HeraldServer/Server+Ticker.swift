import CLibUV
import HeraldBroker

/// The loop's one timer: heartbeat scans and the broker's deadlines (request timeouts).
///
/// Why one `uv_timer` rather than one per request: the broker keeps every deadline in its
/// own heap and reports the earliest (`Broker.nextDeadline`); after each loop iteration
/// (`flushDirty`) the timer is re-armed, one-shot, for whichever comes first, that deadline
/// or the next heartbeat scan. 10,000 requests in flight cost heap entries, not handles.
extension Server {
    func startTicker() {
        uv_timer_init(loop, ticker)
        ticker.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        nextHeartbeatTick = now + Server.tickInterval(heartbeatMs: config.heartbeatMs)
        armTicker()
    }

    /// A quarter of the heartbeat, within 10 ms … 1 s, so pings are late by at most that.
    static func tickInterval(heartbeatMs: Int) -> Int {
        heartbeatMs > 0 ? min(1_000, max(10, heartbeatMs / 4)) : 1_000
    }

    /// Arms the timer for the earlier of the next heartbeat scan and the next deadline,
    /// unless it is already armed for exactly that time.
    func armTicker() {
        guard !handlesClosed else { return }
        var due = nextHeartbeatTick
        if let deadline = broker.nextDeadline { due = min(due, deadline) }
        guard due != tickerDue else { return }
        tickerDue = due
        // uv_timer_start counts from the loop's cached time, the same clock as `now`.
        uv_timer_start(ticker, { timer in
            guard let timer, let data = timer.pointee.data else { return }
            Unmanaged<Server>.fromOpaque(data).takeUnretainedValue().tick()
        }, UInt64(max(0, due - now)), 0)
    }

    /// The timer fired: a heartbeat scan (which fires due deadlines too) when one is due,
    /// else just the deadlines; then flush, which re-arms the timer.
    private func tick() {
        let now = self.now
        tickerDue = -1
        if now >= nextHeartbeatTick {
            nextHeartbeatTick = now + Server.tickInterval(heartbeatMs: config.heartbeatMs)
            for session in broker.tick(now: now) { connections[session.id]?.close() }
        } else {
            broker.fireDeadlines(now: now)
        }
        flushDirty()
        if isStopping && now >= stopDeadline {
            for connection in Array(connections.values) { connection.close() }
            finishStopping()
        }
    }
}
