@testable import Herald
import Synchronization

/// A path monitor driven by hand: the Linux test double behind the same `PathMonitor`
/// abstraction that `NWPathMonitor` fills on Apple platforms.
final class ManualPathMonitor: PathMonitor {
    private let handler = Mutex<(@Sendable (PathNews) -> Void)?>(nil)

    /// Remembers where news go.
    func start(_ onNews: @escaping @Sendable (PathNews) -> Void) {
        handler.withLock { $0 = onNews }
    }

    /// Forgets it.
    func cancel() {
        handler.withLock { $0 = nil }
    }

    /// Sends news as the system would.
    func send(_ news: PathNews) {
        let onNews = handler.withLock { $0 }
        onNews?(news)
    }
}
