#if canImport(Glibc)
import Glibc
#endif

/// The progress lines `heraldd --reshard` prints on stderr, at most one a second: channels
/// moved of those to move (and of all), the rate of this run, and the time left at that
/// rate. Pure apart from the clock it is handed, so its text is tested.
struct ReshardMeter: Sendable {
    /// When this run started (monotonic seconds).
    let start: Double
    /// `moved` when this run started (a resumed run counts its own rate).
    let movedAtStart: Int
    /// When a line was last given.
    private var lastLine: Double

    /// How long between two lines.
    static let interval = 1.0

    /// A meter starting at `now` with `moved` channels already moved.
    init(now: Double, moved: Int) {
        start = now
        movedAtStart = moved
        lastLine = now
    }

    /// The line to print at `now`, or nil when one was printed less than `interval` ago.
    mutating func line(now: Double, moved: Int, moving: Int, channels: Int) -> String? {
        guard now - lastLine >= Self.interval else { return nil }
        lastLine = now
        return Self.text(moved: moved, moving: moving, channels: channels, rate: rate(now: now, moved: moved))
    }

    /// Channels moved per second in this run.
    func rate(now: Double, moved: Int) -> Double {
        let elapsed = now - start
        return elapsed > 0 ? Double(moved - movedAtStart) / elapsed : 0
    }

    /// `moved 1200 of 3300 channels (36%; 10000 in all), 2400 channels/s, about 0.9 s left`
    /// (no time left once all moved).
    static func text(moved: Int, moving: Int, channels: Int, rate: Double) -> String {
        let percent = moving > 0 ? moved * 100 / moving : 100
        var line = "moved \(moved) of \(moving) channels (\(percent)%; \(channels) in all), \(Int(rate.rounded())) channels/s"
        if rate > 0, moved < moving {
            line += ", about " + duration(Double(moving - moved) / rate) + " left"
        }
        return line
    }

    /// `0.4 s`, `42 s`, `3 min 5 s`, `2 h 7 min`.
    static func duration(_ seconds: Double) -> String {
        if seconds < 9.95 {
            let tenths = Int((max(0, seconds) * 10).rounded())
            return "\(tenths / 10).\(tenths % 10) s"
        }
        let whole = Int(seconds.rounded())
        if whole < 60 { return "\(whole) s" }
        if whole < 3600 { return "\(whole / 60) min \(whole % 60) s" }
        return "\(whole / 3600) h \(whole % 3600 / 60) min"
    }

    /// Monotonic seconds.
    static func now() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }
}
