import CLibUV
import HeraldBroker

/// The connections of one loop waiting for their user's rate limits (`Connection+Throttle`),
/// each until its time, behind one `uv_timer` armed for the earliest.
///
/// A wait is at least 10 ms (`RateBucket.resumeLevel`), so the timer runs at most about a
/// hundred times a second whatever the users do; each run looks at every waiting connection
/// of the loop (a user's connections wait for the same bucket, so they are due together).
final class ThrottleKeeper {
    private unowned let worker: Worker
    private let timer: UnsafeMutablePointer<uv_timer_t>
    private var waiting: [ConnectionID: (connection: Connection, due: Int)] = [:]
    /// The time the timer is armed for, or nil when it is stopped.
    private var armedFor: Int?
    private var isClosed = false

    init(worker: Worker) {
        self.worker = worker
        timer = UnsafeMutablePointer<uv_timer_t>.allocate(capacity: 1)
        uv_timer_init(worker.loop, timer)
        timer.pointee.data = Unmanaged.passUnretained(self).toOpaque()
    }

    /// How many connections wait now.
    var count: Int { waiting.count }

    /// `connection` waits `ms` milliseconds.
    func hold(_ connection: Connection, ms: Int) {
        guard !isClosed else { return }
        let due = worker.now + max(1, ms)
        waiting[connection.session.id] = (connection, due)
        if armedFor.map({ due < $0 }) ?? true { arm(for: due) }
    }

    /// Forgets a closing connection.
    func forget(_ connection: Connection) {
        guard waiting.removeValue(forKey: connection.session.id) != nil, waiting.isEmpty else { return }
        uv_timer_stop(timer)
        armedFor = nil
    }

    private func arm(for due: Int) {
        armedFor = due
        uv_timer_start(timer, { timer in
            guard let timer, let data = timer.pointee.data else { return }
            Unmanaged<ThrottleKeeper>.fromOpaque(data).takeUnretainedValue().fire()
        }, UInt64(max(0, due - worker.now)), 0)
    }

    /// Resumes every connection that is due, and arms for the next.
    private func fire() {
        armedFor = nil
        let now = worker.now
        var due: [Connection] = []
        var next: Int?
        for (id, entry) in waiting {
            if entry.due <= now {
                due.append(entry.connection)
                waiting[id] = nil
            } else {
                next = min(next ?? entry.due, entry.due)
            }
        }
        if let next { arm(for: next) }
        for connection in due { connection.resumeAfterThrottle() }
    }

    /// Closes the timer with the loop's other handles (its memory goes in the close callback).
    func close() {
        guard !isClosed else { return }
        isClosed = true
        waiting.removeAll()
        uv_close(UnsafeMutableRawPointer(timer).assumingMemoryBound(to: uv_handle_t.self)) { handle in
            UnsafeMutableRawPointer(handle)?.deallocate()
        }
    }
}
