#if canImport(Network)
import Dispatch
import Network
import Synchronization

/// The Apple path monitor: `NWPathMonitor` on its own queue, reporting `.satisfied` or
/// `.unsatisfied` (which includes `.requiresConnection`: nothing is up until something else
/// brings the interface up).
final class SystemPathMonitor: PathMonitor, @unchecked Sendable {
    // @unchecked: `NWPathMonitor` is thread-safe (Network.framework); `cancelled` is atomic.
    private let monitor = NWPathMonitor()
    private let queue = DispatchQueue(label: "herald.path")
    private let cancelled = Atomic<Bool>(false)

    /// Creates a monitor; nothing is watched until `start`.
    init() {}

    /// Starts `NWPathMonitor`; each path update becomes one `PathNews`.
    func start(_ onNews: @escaping @Sendable (PathNews) -> Void) {
        monitor.pathUpdateHandler = { [weak self] path in
            guard let self, !self.cancelled.load(ordering: .acquiring) else { return }
            onNews(path.status == .satisfied ? .satisfied : .unsatisfied)
        }
        monitor.start(queue: queue)
    }

    /// Cancels `NWPathMonitor`; later updates are ignored.
    func cancel() {
        cancelled.store(true, ordering: .releasing)
        monitor.cancel()
    }
}
#endif
