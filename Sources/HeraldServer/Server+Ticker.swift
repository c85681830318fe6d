import CLibUV
import HeraldBroker

/// The main loop's one timer: heartbeat scans and the broker's deadlines (request timeouts).
///
/// Why one `uv_timer` rather than one per request: the broker keeps every deadline in its
/// own heap and reports the earliest (`Broker.nextDeadline`); after each flush pass of the
/// main loop the timer is re-armed, one-shot, for whichever comes first, that deadline or
/// the next heartbeat scan. Another loop that creates an earlier deadline (a request from
/// one of its connections) asks the main loop to re-arm (`Worker.Message.rearm`).
/// 10,000 requests in flight cost heap entries, not handles.
extension Server {
    func startTicker() {
        uv_timer_init(main.loop, ticker)
        tickerStarted = true
        ticker.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        nextHeartbeatTick = main.now + Server.tickInterval(heartbeatMs: config.heartbeatMs)
        armTicker()
    }

    /// A quarter of the heartbeat, within 10 ms … 1 s, so pings are late by at most that.
    static func tickInterval(heartbeatMs: Int) -> Int {
        heartbeatMs > 0 ? min(1_000, max(10, heartbeatMs / 4)) : 1_000
    }

    /// Main loop only: arms the timer for the earlier of the next heartbeat scan and the
    /// next deadline, unless it is already armed for exactly that time.
    func armTicker() {
        guard tickerStarted else { return }
        let heartbeat = nextHeartbeatTick
        let due = shared.withLock(.tick) { broker -> Int in
            let due = min(heartbeat, broker.nextDeadline ?? Int.max)
            armedDue = due
            return due
        }
        guard due != tickerDue else { return }
        tickerDue = due
        // uv_timer_start counts from the loop's cached time, the same clock as `now`.
        uv_timer_start(ticker, { timer in
            guard let timer, let data = timer.pointee.data else { return }
            Unmanaged<Server>.fromOpaque(data).takeUnretainedValue().tick()
        }, UInt64(max(0, due - main.now)), 0)
    }

    /// Cluster mode: the Redis link figures `stats` carries (issue 37: the console shows each
    /// node's link), taken on the main loop where the engine lives; nil on a single node.
    private func clusterLinkFigures() -> [StatsFigure]? {
        guard let engine = clusterEngine else { return nil }
        return [StatsFigure("cluster_ready", engine.isReady ? 1 : 0),
                StatsFigure("cluster_redis_rtt_us", engine.redisRoundTripUs)]
    }

    /// Any loop, under the broker lock: whether the main timer fires too late for `deadline`.
    func needsRearm(for deadline: Int?) -> Bool {
        guard let deadline else { return false }
        return deadline < armedDue
    }

    /// The timer fired: a heartbeat scan (which fires due deadlines too) when one is due,
    /// else just the deadlines; then flush, which re-arms the timer.
    private func tick() {
        let now = main.now
        tickerDue = -1
        var overdue: [ConnectionID] = []
        if now >= nextHeartbeatTick {
            nextHeartbeatTick = now + Server.tickInterval(heartbeatMs: config.heartbeatMs)
            // The sweeps stop at the pass budget: each visit is several lookups in tables
            // that may hold millions of names.
            let start = uv_hrtime()
            let budget = passBudgetNs
            let link = clusterLinkFigures()
            overdue = shared.withLock(.tick) { broker in
                if let link { broker.clusterLinkFigures = link }
                return broker.tick(now: now, isOverBudget: { budget > 0 && uv_hrtime() &- start > budget }).map(\.id)
            }
        } else {
            shared.withLock(.tick) { broker in broker.fireDeadlines(now: now) }
        }
        for id in overdue { worker(for: id).post(.close(id)) }
        returnFreedMemoryIfDue(now: now)
        main.flushDirty()
        if isStopping && now >= stopDeadline {
            for worker in workers { worker.post(.closeAll) }
            postStop()
        }
    }
}
