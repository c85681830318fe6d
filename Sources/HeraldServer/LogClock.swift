#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The wall clock a logger stamps its lines with; tests fix it to get exact lines.
public struct LogClock: Sendable {
    /// Milliseconds since 1970-01-01T00:00:00Z.
    let now: @Sendable () -> Int64

    /// Creates a clock from a function returning milliseconds since the Unix epoch (UTC).
    /// - Parameter now: Called once per written line.
    public init(_ now: @escaping @Sendable () -> Int64) {
        self.now = now
    }

    /// The real time from `clock_gettime(CLOCK_REALTIME)`: log times are wall times, meant for humans.
    public static let system = LogClock {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return Int64(spec.tv_sec) * 1000 + Int64(spec.tv_nsec) / 1_000_000
    }

    /// A clock stuck at one instant, for tests that compare whole lines.
    /// - Parameter milliseconds: Milliseconds since the Unix epoch (UTC).
    /// - Returns: A clock that always answers `milliseconds`.
    public static func fixed(millisecondsSince1970 milliseconds: Int64) -> LogClock {
        LogClock { milliseconds }
    }
}
