import CLibUV
import HeraldBroker

/// Keeps the large write buffers (past `Connection.retainedCapacity`) of a loop's connections
/// until each connection has written nothing for `idleMs`, then frees them.
///
/// Why (issue 16, row 2): a subscriber behind a fast publisher queues more than 1 MiB between
/// writes, so its queue is reserved at its limit (`Session.reserveOutbound`: a fresh mapping,
/// since glibc maps blocks that large). Freeing such a buffer after every write (as this
/// daemon did, so one burst does not pin memory) meant that the next one was mapped again,
/// every page faulted in and unmapped after: at 1→1 with 16 KiB events, 3.5 page faults per
/// event. Kept while the connection streams, the session's queue and the buffer being written
/// take turns; a connection idle for `idleMs` gives both back, so a burst still pins nothing.
///
/// One `uv_timer` per loop, running only while some connection holds a large buffer; the
/// release runs under the broker lock (the session's queue is the broker's), the `free` after
/// it.
final class LargeBufferKeeper {
    /// How long a connection must have written nothing before its large buffers go.
    static let idleMs = 100

    private unowned let worker: Worker
    private let timer: UnsafeMutablePointer<uv_timer_t>
    private var holders: [ConnectionID: Connection] = [:]
    private var isClosed = false

    init(worker: Worker) {
        self.worker = worker
        timer = UnsafeMutablePointer<uv_timer_t>.allocate(capacity: 1)
        uv_timer_init(worker.loop, timer)
        timer.pointee.data = Unmanaged.passUnretained(self).toOpaque()
    }

    /// Remembers a connection whose buffers are large, and starts the timer if it was idle.
    func hold(_ connection: Connection) {
        guard !isClosed, holders.updateValue(connection, forKey: connection.session.id) == nil else { return }
        if holders.count == 1 {
            let ms = UInt64(LargeBufferKeeper.idleMs)
            uv_timer_start(timer, { timer in
                guard let timer, let data = timer.pointee.data else { return }
                Unmanaged<LargeBufferKeeper>.fromOpaque(data).takeUnretainedValue().releaseIdle()
            }, ms, ms)
        }
    }

    /// Forgets a closing connection (its buffers go with it).
    func forget(_ connection: Connection) {
        guard holders.removeValue(forKey: connection.session.id) != nil, holders.isEmpty else { return }
        uv_timer_stop(timer)
    }

    /// Frees the buffers of every holder idle for `idleMs`; stops the timer when none is left.
    private func releaseIdle() {
        let now = worker.now
        var released: [[UInt8]] = []
        let idleSince = now - LargeBufferKeeper.idleMs
        worker.shared.withLock { _ in
            holders = holders.filter { !$0.value.releaseLargeBuffers(ifIdleSince: idleSince, into: &released) }
        }
        withExtendedLifetime(released) {}
        if holders.isEmpty { uv_timer_stop(timer) }
    }

    /// Closes the timer with the loop's other handles (its memory goes in the close callback).
    func close() {
        guard !isClosed else { return }
        isClosed = true
        holders.removeAll()
        uv_close(UnsafeMutableRawPointer(timer).assumingMemoryBound(to: uv_handle_t.self)) { handle in
            UnsafeMutableRawPointer(handle)?.deallocate()
        }
    }
}
