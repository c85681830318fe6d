import CLibUV
import Foundation
import HeraldBroker

/// Wakes the loop from the writer thread; `uv_async_send` is the one libuv call that is
/// safe from any thread, and libuv coalesces wake-ups that arrive before the loop runs.
struct LoopWaker: @unchecked Sendable {
    let handle: UnsafeMutablePointer<uv_async_t>

    func wake() { uv_async_send(handle) }
}

/// The loop's side of persistence: the writer and the async handle it wakes the loop with.
final class Persistence {
    let writer: StateWriter
    let wakeup: UnsafeMutablePointer<uv_async_t>
    var isStopped = false

    init(writer: StateWriter, wakeup: UnsafeMutablePointer<uv_async_t>) {
        self.writer = writer
        self.wakeup = wakeup
    }
}

extension Server {
    /// Starts the writer thread for a recovered data folder, before anything listens.
    func startPersistence(_ recovered: RecoveredState, directory: String) {
        let wakeup = UnsafeMutablePointer<uv_async_t>.allocate(capacity: 1)
        uv_async_init(main.loop, wakeup) { handle in
            guard let handle, let data = handle.pointee.data else { return }
            Unmanaged<Server>.fromOpaque(data).takeUnretainedValue().persistenceProgressed()
        }
        wakeup.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        let waker = LoopWaker(handle: wakeup)
        let writer = StateWriter(
            directory: directory, recovered: recovered, policy: config.fsync,
            compactMinBytes: config.compactMinBytes, logger: logger.child(component: "state"),
            notify: { waker.wake() })
        persistence = Persistence(writer: writer, wakeup: wakeup)
        writer.start()
    }

    /// Hands this iteration's state records to the writer. Any loop calls it at the start
    /// of its flush pass, under the broker lock (`broker` is the locked broker).
    func drainStateRecords(_ broker: Broker) {
        guard let persistence, !persistence.isStopped else { return }
        broker.drainRecords { records, upTo in persistence.writer.enqueue(records, upTo: upTo) }
    }

    /// Main loop: the writer made progress or failed to: release the answers it made
    /// durable, pass on its fault and backlog (so the broker refuses what it cannot take and
    /// times out held answers), hand it a snapshot when it asked for one.
    ///
    /// The progress is read under the broker lock, the order every enqueue takes the two
    /// locks in, so no loop's enqueue slips between reading the backlog and reporting it.
    private func persistenceProgressed() {
        guard let persistence, !persistence.isStopped else { return }
        let now = main.now
        shared.withLock { broker in
            let progress = persistence.writer.takeProgress()
            broker.durable(upTo: progress.ackable, now: now)
            broker.dataFolderReport(fault: progress.fault, writerBytes: progress.backlogBytes, now: now)
            if progress.wantsSnapshot {
                drainStateRecords(broker)
                persistence.writer.enqueueSnapshot(broker.store.snapshot(), revFloor: broker.store.revFloor)
            }
        }
        main.flushDirty()
    }

    /// Writes and syncs what is left, joins the writer thread, closes the async handle.
    func stopPersistence() {
        guard let persistence, !persistence.isStopped else { return }
        shared.withLock { broker in
            drainStateRecords(broker)
            persistence.isStopped = true
        }
        persistence.writer.stop()
        uv_close(UnsafeMutableRawPointer(persistence.wakeup).assumingMemoryBound(to: uv_handle_t.self)) { handle in
            UnsafeMutableRawPointer(handle)?.deallocate()
        }
    }
}
