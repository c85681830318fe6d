#if canImport(Glibc)
import Glibc
#endif

/// Checks of the history settings against what `since` replays and the machine can carry
/// (issue 13).
///
/// Since replays are flow-controlled (`Broker+Replay.swift`), `history_bytes` far above
/// `max_pending` or `max_pending_total` is fine: a replay holds at most half of `max_pending`
/// (1 MiB at most) of each reader's output at a time, whatever the history's size. What is
/// left to check is whether the history itself fits the machine, and whether one event can
/// fit a connection's queue at all.
///
/// Rules (docs/operations.md, "History and replays"):
/// - refused: `history_bytes` above the machine's physical memory (with `history` above 0):
///   the cap could never take effect before the daemon runs out of memory;
/// - warned at start and on reload: `history_bytes` above half the physical memory;
///   `history` above 0 with `history_bytes` 0 (nothing is kept); `max_line` or
///   `max_value_bytes` so close to `max_pending` that such an event can never be queued
///   for any connection (live or replayed: it meets the slow-consumer policy).
extension Config {
    /// Bytes an event frame adds around its data or value: the `{"event":…,"sub":…,"seq":…,
    /// "from":…}` envelope, with room for a long channel and subscription name.
    static let eventFrameOverhead = 1_024

    /// The machine's physical memory in bytes (0 when unknown, which turns the checks off).
    static var physicalMemory: Int {
        let pages = sysconf(Int32(_SC_PHYS_PAGES))
        let size = sysconf(Int32(_SC_PAGESIZE))
        return pages > 0 && size > 0 ? pages * size : 0
    }

    /// The history setting that cannot work, if any.
    /// - Parameter memory: the machine's physical memory in bytes (0: unknown, nothing refused).
    /// - Returns: the problem, naming the key, or nil.
    func historyProblem(memory: Int) -> ConfigProblem? {
        guard history > 0, memory > 0, historyBytes > memory else { return nil }
        return ConfigProblem(description: "bad value for \"history_bytes\": " + String(historyBytes)
            + " is more than this machine's memory (" + String(memory) + " bytes); the cap could never take effect")
    }

    /// Risky history settings, one sentence each, for the start-up and reload log.
    /// - Parameter memory: the machine's physical memory in bytes (0: unknown).
    /// - Returns: the warnings, empty when none.
    func historyWarnings(memory: Int) -> [String] {
        var warnings: [String] = []
        if history > 0 && memory > 0 && historyBytes > memory / 2 {
            warnings.append("history_bytes " + String(historyBytes) + " is more than half of this machine's memory ("
                + String(memory) + " bytes)")
        }
        if history > 0 && historyBytes == 0 {
            warnings.append("history is " + String(history) + " but history_bytes 0 keeps no events")
        }
        let largest = Swift.max(maxLine, maxValueBytes) + Config.eventFrameOverhead
        if largest > maxPending {
            warnings.append("max_pending " + String(maxPending) + " is below the largest event (max_line "
                + String(maxLine) + ", max_value_bytes " + String(maxValueBytes)
                + "): such an event can never be queued, live or replayed, and meets the slow_consumer policy")
        }
        return warnings
    }
}

extension Server {
    /// Logs each risky history setting (`Config.historyWarnings`), at start and on reload.
    func warnAboutHistory(_ config: Config) {
        for warning in config.historyWarnings(memory: Config.physicalMemory) {
            logger.warn("risky history settings", ["note": warning])
        }
    }
}
