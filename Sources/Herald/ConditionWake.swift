#if canImport(Network)
import Foundation

/// The Apple wake-up: a condition variable that both other threads (`wake()`) and the
/// transport's Network.framework callbacks (`transportChanged()`) signal.
///
/// Why not a pipe: Network.framework has no descriptor to `poll`; its callbacks run on a
/// dispatch queue, so the I/O thread waits on this condition for either kind of news.
final class ConditionWake: TransportWake, @unchecked Sendable {
    // @unchecked: both flags are read and written only while `condition` is locked.
    private let condition = NSCondition()
    private var woken = false
    private var transportEvent = false

    /// Creates an unsignalled wake-up.
    init() {}

    /// Makes the current (or next) wait return: another thread has news (frames, stop).
    func wake() {
        condition.lock()
        woken = true
        condition.broadcast()
        condition.unlock()
    }

    /// Makes the current (or next) wait return: the transport has news (bytes, a state change,
    /// a finished send).
    func transportChanged() {
        condition.lock()
        transportEvent = true
        condition.broadcast()
        condition.unlock()
    }

    /// Waits up to `milliseconds` or until either kind of news; consumes both.
    /// - Returns: whether `wake()` was among them (a connect attempt then gives up).
    @discardableResult
    func waitForNews(milliseconds: Int) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        let deadline = Date(timeIntervalSinceNow: Double(max(0, milliseconds)) / 1000)
        while !woken && !transportEvent {
            if !condition.wait(until: deadline) { break }
        }
        let wasWoken = woken
        woken = false
        transportEvent = false
        return wasWoken
    }

    /// Waits up to `milliseconds` or until woken.
    func wait(milliseconds: Int) {
        waitForNews(milliseconds: milliseconds)
    }

    /// Forgets news already signalled.
    func drain() {
        condition.lock()
        woken = false
        transportEvent = false
        condition.unlock()
    }
}
#endif
