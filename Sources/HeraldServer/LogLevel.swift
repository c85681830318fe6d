/// How important a log event is; events below the configured level are not written.
///
/// The raw value is the spelling used in the config file, on the command line and in log lines.
public enum LogLevel: String, Sendable, CaseIterable, Comparable {
    /// Detail for chasing a bug; too chatty for production.
    case debug
    /// Normal operation worth a line: start, stop, reload.
    case info
    /// Something odd that the daemon survived.
    case warn
    /// Something failed.
    case error

    /// Position in severity order; `CaseIterable` order is the severity order.
    var severity: Int {
        switch self {
        case .debug: return 0
        case .info: return 1
        case .warn: return 2
        case .error: return 3
        }
    }

    /// Orders levels by severity, so `level >= threshold` means "write it".
    public static func < (lhs: LogLevel, rhs: LogLevel) -> Bool {
        lhs.severity < rhs.severity
    }
}
