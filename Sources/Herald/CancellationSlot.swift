import Synchronization

/// Joins a task's cancellation to one waiting call: whichever comes second of "the call is
/// registered" (`arm`) and "the task was cancelled" (`cancel`) runs the call's cancel action.
///
/// Why: `withTaskCancellationHandler` may run its handler before, during or after the
/// operation registers what it waits for (a `rid`, a waiter); this makes the order irrelevant,
/// and the action runs at most once.
final class CancellationSlot: Sendable {
    private struct Slot {
        var cancelled = false
        var action: (@Sendable () -> Void)?
    }

    private let slot = Mutex(Slot())

    /// Creates an unarmed slot.
    init() {}

    /// Installs the cancel action; runs it at once when the task was cancelled already.
    /// - Parameter action: undoes the registration and resumes the waiter with `.cancelled`.
    func arm(_ action: @escaping @Sendable () -> Void) {
        let runNow = slot.withLock { slot -> Bool in
            if slot.cancelled { return true }
            slot.action = action
            return false
        }
        if runNow { action() }
    }

    /// The task was cancelled: runs the action if armed, else remembers it for `arm`.
    func cancel() {
        let action = slot.withLock { slot -> (@Sendable () -> Void)? in
            slot.cancelled = true
            defer { slot.action = nil }
            return slot.action
        }
        action?()
    }
}
