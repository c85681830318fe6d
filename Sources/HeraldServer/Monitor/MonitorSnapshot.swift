import HeraldBroker

/// What the monitor reads from the daemon for one `/varz` or `/metrics` answer.
///
/// Taken in one go (the broker figures under one hold of the broker lock), then rendered
/// outside the lock, so a scrape holds the lock only as long as the `stats` op does.
struct MonitorSnapshot: Sendable, Equatable {
    /// The daemon's version.
    var version: String
    /// Whether shutdown has begun.
    var isStopping: Bool
    /// The `stats` figures, in the `stats` op's order.
    var figures: [StatsFigure]
    /// Figures of the process from `/proc` and `getrusage`, when readable.
    var process: ProcessFigures?
    /// Wall-clock time of the snapshot in ms since 1970, for `process_start_time_seconds`.
    var wallClockMs: Int
    /// Whether the data folder cannot take state changes now (a full disk).
    var isDataFolderFull = false
    /// Per user with rate limits, the ms its connections were held for them.
    var throttledMsByUser: [String: Int] = [:]

    /// The value of the figure `name`, or nil.
    func figure(_ name: String) -> Int? {
        figures.first { $0.name == name }?.value
    }
}
