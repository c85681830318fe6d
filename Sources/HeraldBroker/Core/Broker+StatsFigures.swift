extension Broker {
    /// Every figure the `stats` op reports, in its order.
    ///
    /// Call under the broker lock. Every figure is a counter kept up to date, so this costs
    /// the same whatever the daemon holds (issue 12: it used to walk the channel table).
    /// - Parameter now: the monotonic time in ms, for `uptime_ms`.
    /// - Returns: the figures, named as in the `stats` frame.
    public func statsFigures(now: Int) -> [StatsFigure] {
        [
            StatsFigure("uptime_ms", now - startedAt),
            StatsFigure("connections", sessions.count),
            StatsFigure("total_connections", stats.totalConnections),
            StatsFigure("channels", clientChannelCount),
            StatsFigure("subscriptions", index.count),
            StatsFigure("msgs_in", stats.msgsIn),
            StatsFigure("msgs_out", stats.msgsOut),
            StatsFigure("bytes_in", stats.bytesIn),
            StatsFigure("bytes_out", stats.bytesOut),
            StatsFigure("slow_consumers", stats.slowConsumers),
            StatsFigure("dropped", stats.dropped),
            // Pacing (`Broker+Pacing`): how often fast publishers waited for subscribers.
            StatsFigure("paced", stats.paced),
            StatsFigure("pace_timeouts", stats.paceTimeouts),
            // Event control: these let tests prove nothing leaks.
            StatsFigure("locks", locks.count),
            StatsFigure("instance_channels", instances.count),
            StatsFigure("requests", requests.count),
            StatsFigure("timers", deadlines.count),
            StatsFigure("signals", signals.count),
            StatsFigure("links", links.count),
            StatsFigure("retained_bytes", store.retainedBytes),
            StatsFigure("history_bytes", heldHistoryBytes),
            // Auth (issue 12): what to alert on when someone guesses tokens.
            StatsFigure("auth_failures", auth.failureCount),
            StatsFigure("auth_blocked", auth.blockedCount),
            StatsFigure("unauthenticated", auth.unauthenticated.count),
        ]
    }
}
