import HeraldBroker
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Hand-off boxes whose writes are not counted yet, left by a loop that found the broker
/// lock taken (`Worker.flushDirty` with more than one loop): the holder counts them before
/// it lets go (`SharedBroker.withLock`). So a loop that only writes never waits for the
/// lock, and a write is counted by the end of the hold that kept it out.
///
/// The race: a holder that looked just before a loop left its boxes. The leaving loop
/// tries the lock once more after leaving them (`SharedBroker.leave`); if that fails, the
/// lock is held by someone who has not let go yet, and will look.
final class HandoffSettlements: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private var boxes: [OutputHandoff] = []
    private var spare: [OutputHandoff] = []
    /// Whether anything was left: one load per lock hold when nothing was.
    private let hasBoxes = Atomic<Bool>(false)

    init() { pthread_mutex_init(mutex, nil) }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// From a loop that could not take the broker lock: leaves `list` (emptied) for the next holder.
    func leave(_ list: inout [OutputHandoff]) {
        pthread_mutex_lock(mutex)
        boxes.append(contentsOf: list)
        hasBoxes.store(true, ordering: .releasing)
        pthread_mutex_unlock(mutex)
        list.removeAll(keepingCapacity: true)
    }

    /// Under the broker lock: counts every box left.
    func settleIfAny(_ broker: Broker) {
        guard hasBoxes.load(ordering: .acquiring) else { return }
        pthread_mutex_lock(mutex)
        swap(&boxes, &spare)
        hasBoxes.store(false, ordering: .relaxed)
        pthread_mutex_unlock(mutex)
        for box in spare { box.settle(broker) }
        spare.removeAll(keepingCapacity: true)
    }
}
