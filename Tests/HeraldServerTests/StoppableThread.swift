import Foundation
import HeraldTestSupport

/// A test's own thread that runs until `stop()`; `stop` waits for it to end (once; later
/// calls return at once). Shared by the failover tests' writer and probe.
final class StoppableThread: @unchecked Sendable {
    private let stopped = LockedValue(false)
    private let done = DispatchSemaphore(value: 0)

    /// Whether `stop` was called: the body's loop checks it.
    var isStopped: Bool { stopped.value }

    /// Runs `body` on a new thread.
    func start(_ body: @escaping @Sendable () -> Void) {
        let done = self.done
        Thread {
            body()
            done.signal()
        }.start()
    }

    /// Asks the body to end and waits until it has.
    func stop() {
        let first = stopped.withLock { stopped in
            defer { stopped = true }
            return !stopped
        }
        if first { done.wait() }
    }
}
