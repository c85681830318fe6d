import Synchronization

/// Holds back a `warn` or `error` line repeated faster than an operator can read it (issue
/// 32, item 9: 8,053 `malformed message` lines from forged messages on a Redis channel).
///
/// Per message text (the line's key: component, level and message, not its fields), at most
/// `burst` lines are written per `windowMs`; the rest are counted and dropped, and the first
/// line of that key written after them carries `suppressed=N`. So a peer that makes the daemon
/// complain a million times costs a few lines, and no complaint is lost without a trace. The
/// table is bounded (`capacity` keys; full, it starts over), since messages are the code's
/// own texts, few, though some name a peer's value.
final class LogRepeatLimiter: Sendable {
    private struct Entry {
        var windowStart: Int
        var written: Int
        var dropped: Int
    }

    private let state = Mutex<[String: Entry]>([:])
    /// Lines of one key written per window.
    let burst: Int
    /// The window, in ms.
    let windowMs: Int
    /// Keys remembered at most.
    let capacity: Int

    /// Creates a limiter: `burst` lines per `windowMs` per key, `capacity` keys.
    init(burst: Int = 20, windowMs: Int = 10_000, capacity: Int = 1_024) {
        self.burst = burst
        self.windowMs = windowMs
        self.capacity = capacity
    }

    /// Whether a line of `key` may be written at `now` (ms), and how many of its lines were
    /// dropped before it (0 when none, or when it is dropped itself).
    func admit(_ key: String, now: Int) -> (write: Bool, suppressed: Int) {
        state.withLock { table in
            if table[key] == nil && table.count >= capacity { table.removeAll(keepingCapacity: true) }
            var entry = table[key] ?? Entry(windowStart: now, written: 0, dropped: 0)
            if now - entry.windowStart >= windowMs {
                entry.windowStart = now
                entry.written = 0
            }
            guard entry.written < burst else {
                entry.dropped += 1
                table[key] = entry
                return (false, 0)
            }
            entry.written += 1
            let suppressed = entry.dropped
            entry.dropped = 0
            table[key] = entry
            return (true, suppressed)
        }
    }
}
