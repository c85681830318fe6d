import HeraldBroker
#if canImport(Glibc)
import Glibc
#endif

/// The broker and the one lock that every loop takes to use it.
///
/// The broker is a single-threaded state machine; with several loops (`workers`) each loop
/// takes this lock around its calls: once per read (all the lines of that read), once per
/// flush pass, once per timer tick. Socket reads and writes happen outside the lock, so
/// loops overlap their system calls while the broker's work is serialised.
/// Lock order: this lock before a worker's inbox lock, never the other way round.
final class SharedBroker: @unchecked Sendable {
    private let broker: Broker
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)

    init(_ broker: Broker) {
        self.broker = broker
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with exclusive use of the broker.
    func withLock<R>(_ body: (Broker) throws -> R) rethrows -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(broker)
    }
}
