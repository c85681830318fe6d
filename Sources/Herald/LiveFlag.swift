import Synchronization

/// A flag shared by an observation and the calls it queued: cleared on `cancel()`, checked
/// right before each queued call runs, so cancelling also stops calls already queued.
final class LiveFlag: Sendable {
    private let flag: Atomic<Bool>

    /// Creates the flag.
    /// - Parameter value: its first value.
    init(_ value: Bool) {
        flag = Atomic(value)
    }

    /// The flag now.
    var value: Bool { flag.load(ordering: .acquiring) }

    /// Sets the flag.
    /// - Parameter value: the new value.
    func set(_ value: Bool) { flag.store(value, ordering: .releasing) }
}
