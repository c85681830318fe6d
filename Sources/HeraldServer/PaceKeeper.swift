import CLibUV
import HeraldBroker

/// The connections of one loop paced for a subscriber that fell behind (`Broker+Pacing`):
/// each waits, reading stopped, until that subscriber's pending bytes fell to half of
/// `pace_pending` or `Broker.paceLimitMs` passed.
///
/// The subscriber's write completions wake the loop, and every pass (`Worker.flushDirty`)
/// and every write count (`Worker.accountWritten`) looks at the waiting connections under
/// the lock it holds anyway; a repeating timer wakes the loop for the time limit while any
/// wait. A pause is over in one of those looks: the connection goes on in the next pass,
/// as a connection that spent its line budget does (`Worker.yielded`).
///
/// What a hostile client makes it cost: a publisher is paced for one subscriber at a time,
/// so the list holds at most one entry per connection of the loop, looked at in O(n) while
/// non-empty; a subscriber that never reads holds each publisher at most `paceLimitMs`
/// once, then paces nobody until it catches up (`Broker.paceTimedOut`).
final class PaceKeeper {
    private unowned let worker: Worker
    private let timer: UnsafeMutablePointer<uv_timer_t>
    /// Paused connections with the subscriber they wait for and their time limit (loop ms).
    private var waiting: [(connection: Connection, session: Session, due: Int)] = []
    private var isClosed = false

    init(worker: Worker) {
        self.worker = worker
        timer = UnsafeMutablePointer<uv_timer_t>.allocate(capacity: 1)
        uv_timer_init(worker.loop, timer)
    }

    /// How many connections wait now.
    var count: Int { waiting.count }

    /// `connection` stopped reading until `session` caught up.
    func hold(_ connection: Connection, for session: Session) {
        guard !isClosed else { return }
        waiting.append((connection, session, worker.now + Broker.paceLimitMs))
        guard waiting.count == 1 else { return }
        let interval = UInt64(Broker.paceLimitMs)
        // Nothing to do in the callback: the pass that follows it looks (`release`).
        uv_timer_start(timer, { _ in }, interval, interval)
    }

    /// Under the broker lock: hands every connection whose pause is over to the next pass.
    func release(_ broker: Broker) {
        let now = worker.now
        var kept = 0
        for entry in waiting {
            if broker.paceIsOver(for: entry.session) {
                worker.yielded(entry.connection)
            } else if entry.due <= now {
                broker.paceTimedOut(for: entry.session)
                worker.yielded(entry.connection)
            } else {
                waiting[kept] = entry
                kept += 1
            }
        }
        waiting.removeLast(waiting.count - kept)
        if waiting.isEmpty { uv_timer_stop(timer) }
    }

    /// Forgets a closing connection.
    func forget(_ connection: Connection) {
        guard let at = waiting.firstIndex(where: { $0.connection === connection }) else { return }
        waiting.remove(at: at)
        if waiting.isEmpty { uv_timer_stop(timer) }
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
