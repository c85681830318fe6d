import Synchronization

/// The level threshold one logger family shares, changeable while threads log.
///
/// An atomic rather than a lock: every log call reads it, even filtered ones, and SIGHUP
/// writes it almost never.
final class SharedLogLevel: Sendable {
    private let severity: Atomic<Int>

    init(_ level: LogLevel) {
        severity = Atomic(level.severity)
    }

    /// The current threshold.
    var level: LogLevel {
        let current = severity.load(ordering: .relaxed)
        return LogLevel.allCases.first { $0.severity == current } ?? .info
    }

    /// Whether an event at `level` passes the threshold.
    func admits(_ level: LogLevel) -> Bool {
        level.severity >= severity.load(ordering: .relaxed)
    }

    /// Replaces the threshold for every logger sharing it.
    func set(_ level: LogLevel) {
        severity.store(level.severity, ordering: .relaxed)
    }
}
