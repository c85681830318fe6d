/// Writes one line per event to a sink (stderr by default): `time level component message key=value…`.
///
/// Cheap when filtered: the message and fields are autoclosures, built only after the level
/// check passes. Loggers made with `child(component:)` share the level, so one `setLevel(_:)`
/// (a SIGHUP reload) retunes the whole daemon. `warn` and `error` lines repeated faster than
/// 20 per 10 s per message are held back and counted (`LogRepeatLimiter`): the next one of
/// that message written says `suppressed=N`.
///
///     log.info("listening", ["host": config.host, "port": config.port])
///     // 2026-11-29T20:47:54.123Z info server listening host=127.0.0.1 port=7400
public final class Logger: Sendable {
    /// The subsystem written after the level, e.g. `server`, `persist`.
    public let component: String
    private let threshold: SharedLogLevel
    private let sink: LogSink
    private let clock: LogClock
    private let repeats: LogRepeatLimiter

    /// Creates a root logger with its own level.
    /// - Parameters:
    ///   - component: The subsystem name written in each line; one word.
    ///   - level: The lowest level written.
    ///   - sink: Where lines go; `.stderr` in the daemon, `LogCapture.sink` in tests.
    ///   - clock: The time source for line stamps; `.system` unless a test fixes it.
    public convenience init(component: String, level: LogLevel, sink: LogSink = .stderr, clock: LogClock = .system) {
        self.init(component: component, threshold: SharedLogLevel(level), sink: sink, clock: clock,
                  repeats: LogRepeatLimiter())
    }

    private init(component: String, threshold: SharedLogLevel, sink: LogSink, clock: LogClock, repeats: LogRepeatLimiter) {
        self.component = component
        self.threshold = threshold
        self.sink = sink
        self.clock = clock
        self.repeats = repeats
    }

    /// A logger for a subsystem that shares this one's level, sink and clock.
    /// - Parameter component: The subsystem name for the child's lines.
    /// - Returns: A logger whose level follows every `setLevel(_:)` in the family.
    public func child(component: String) -> Logger {
        Logger(component: component, threshold: threshold, sink: sink, clock: clock, repeats: repeats)
    }

    /// The lowest level currently written, shared with parent and children.
    public var level: LogLevel {
        threshold.level
    }

    /// Changes the level for this logger and every logger sharing it; safe from any thread.
    /// - Parameter level: The new lowest level written.
    public func setLevel(_ level: LogLevel) {
        threshold.set(level)
    }

    /// Whether an event at `level` would be written; for skipping work beyond one log call.
    /// - Parameter level: The level of the event in question.
    /// - Returns: `true` when the event passes the current threshold.
    public func isEnabled(_ level: LogLevel) -> Bool {
        threshold.admits(level)
    }

    /// Writes one event if `level` passes the threshold.
    /// - Parameters:
    ///   - level: The event's level.
    ///   - message: Free text, evaluated only when the event is written.
    ///   - fields: `key=value` pairs in order, evaluated only when the event is written.
    public func log(
        _ level: LogLevel,
        _ message: @autoclosure () -> String,
        _ fields: @autoclosure () -> KeyValuePairs<String, any CustomStringConvertible> = [:]
    ) {
        guard threshold.admits(level) else { return }
        let now = clock.now()
        let text = message()
        guard level.severity >= LogLevel.warn.severity else {
            return sink.write(LogLine.format(milliseconds: now, level: level, component: component, message: text, fields: fields()))
        }
        let verdict = repeats.admit(component + " " + level.rawValue + " " + text, now: Int(now))
        guard verdict.write else { return }
        var line = LogLine.format(milliseconds: now, level: level, component: component, message: text, fields: fields())
        if verdict.suppressed > 0 {
            line.removeLast()
            line += " suppressed=" + String(verdict.suppressed) + "\n"
        }
        sink.write(line)
    }

    /// Writes a `debug` event: detail for chasing a bug.
    /// - Parameters:
    ///   - message: Free text, evaluated only when the event is written.
    ///   - fields: `key=value` pairs in order, evaluated only when the event is written.
    public func debug(
        _ message: @autoclosure () -> String,
        _ fields: @autoclosure () -> KeyValuePairs<String, any CustomStringConvertible> = [:]
    ) {
        log(.debug, message(), fields())
    }

    /// Writes an `info` event: normal operation worth a line.
    /// - Parameters:
    ///   - message: Free text, evaluated only when the event is written.
    ///   - fields: `key=value` pairs in order, evaluated only when the event is written.
    public func info(
        _ message: @autoclosure () -> String,
        _ fields: @autoclosure () -> KeyValuePairs<String, any CustomStringConvertible> = [:]
    ) {
        log(.info, message(), fields())
    }

    /// Writes a `warn` event: something odd that the daemon survived.
    /// - Parameters:
    ///   - message: Free text, evaluated only when the event is written.
    ///   - fields: `key=value` pairs in order, evaluated only when the event is written.
    public func warn(
        _ message: @autoclosure () -> String,
        _ fields: @autoclosure () -> KeyValuePairs<String, any CustomStringConvertible> = [:]
    ) {
        log(.warn, message(), fields())
    }

    /// Writes an `error` event: something failed.
    /// - Parameters:
    ///   - message: Free text, evaluated only when the event is written.
    ///   - fields: `key=value` pairs in order, evaluated only when the event is written.
    public func error(
        _ message: @autoclosure () -> String,
        _ fields: @autoclosure () -> KeyValuePairs<String, any CustomStringConvertible> = [:]
    ) {
        log(.error, message(), fields())
    }
}
