import CLibUV
import HeraldBroker
#if canImport(Glibc)
import Glibc
#endif

/// One event loop on one thread, owning the connections it was given for their whole life.
///
/// Only this loop's thread touches its handles. Other threads reach it through `post`
/// (a locked inbox plus `uv_async_send`): adopt an accepted socket, flush a connection the
/// broker queued bytes for on another loop, close one, or stop. Per iteration, after the
/// I/O callbacks, the `uv_check` handle flushes every connection with queued bytes.
final class Worker: @unchecked Sendable {
    /// Messages other threads send to this loop.
    enum Message {
        case adopt(fd: Int32, isTCP: Bool, id: Int, transport: Transport = .plain)
        case flush(ConnectionID)
        /// Another loop moved bytes into this connection's `OutputHandoff`: write them
        /// without the broker lock (`Worker+Handoff`).
        case handoff(ConnectionID)
        /// Another loop's verification answered this connection's parked `hello`.
        case resume(ConnectionID)
        case close(ConnectionID)
        case closeAll
        /// Main loop only: a deadline earlier than the timer's was created elsewhere (or a
        /// loop paused connections for cluster backpressure: the engine must look again).
        case rearm
        /// The cluster's outstanding work fell below half its bound: read the connections
        /// paused for backpressure again (`Worker+Backpressure`).
        case resumeReading
        /// Main loop only: a loop held a connection for a doubt about the node's liveness;
        /// the engine asks Redis (`Worker+Doubt`).
        case probeLiveness
        /// The doubt is over: frame the held connections' lines again (`Worker+Doubt`).
        case resumeDoubtHeld
        case stop
    }

    /// This worker's position; connection `id % workerCount == index` lives here.
    let index: Int
    unowned let server: Server
    let shared: SharedBroker
    let loop: UnsafeMutablePointer<uv_loop_t>
    /// The read buffer every connection of this loop shares; reads are parsed at once.
    let readBufferBytes: UnsafeMutableRawBufferPointer
    /// The same buffer as libuv wants it.
    let readBuffer: uv_buf_t
    private(set) var connections: [ConnectionID: Connection] = [:]
    private let flushCheck: UnsafeMutablePointer<uv_check_t>
    /// Keeps the loop from sleeping in poll while connections that yielded wait for their
    /// next budget (`Connection+Budget.swift`); active only then.
    private let yieldIdle: UnsafeMutablePointer<uv_idle_t>
    /// Connections that spent a pass's line budget with lines left, by id.
    private var yieldedConnections: [ConnectionID: Connection] = [:]
    /// Connections whose lines queued cluster work in this pass (`Worker+Backpressure`).
    var clusterWriters: [Connection] = []
    /// Connections not read now for cluster backpressure, by id.
    var backpressured: [ConnectionID: Connection] = [:]
    /// Connections whose lines wait for the node's liveness to be confirmed, by id.
    var doubtHeld: [ConnectionID: Connection] = [:]
    /// Counts loop passes (one per `flushDirty`), for the per-pass line budget.
    private(set) var pass = 0
    /// This pass's line budget per connection: `pass_budget_us` shared by the connections
    /// that spent theirs in the pass before (`resumeYielded`), so ten flooding connections
    /// together take about one budget per pass, not ten, and a pass stays short for everyone
    /// else (a ping waits for the rest of the pass it arrives in and the end of the pass it
    /// is answered in: with ten budgets per pass that was 20-30 ms).
    private(set) var connectionBudgetNs: UInt64 = 0
    /// Time spent writing to connections in this pass so far, and in the whole pass before (ns).
    private var passWriteNs: UInt64 = 0
    private var lastPassWriteNs: UInt64 = 0
    /// A pass's line budget is at least this many times its writes' time (see `passBudgetNs`).
    static let linesPerWriteTime: UInt64 = 4
    /// … but at most this many times `pass_budget_us`.
    static let maxBudgetStretch: UInt64 = 32

    /// This pass's line budget for all connections together: `pass_budget_us`, stretched to
    /// `linesPerWriteTime` × the time the pass before spent writing, at most
    /// `maxBudgetStretch` × `pass_budget_us` (0: no limit).
    ///
    /// Why (issue 16): a write costs per connection, not per byte: at 1→1000 a pass wrote to
    /// 1,000 sockets (12-22 ms of wall time on 2 cores, each write waking a reader), after
    /// only 1 ms of lines, so each write carried a few events and the loop spent nearly all
    /// its time writing (0.4-0.7 M deliveries/s at 16 B against nats-server's 2.6-2.8 M;
    /// 3.4-4.3 M with the stretch, docs/benchmarks.md). Giving lines a
    /// fixed multiple of the writes' time keeps writes at most a fifth of a pass whatever the
    /// fan-out, while a pass with few writes keeps the plain budget, so a flood of cheap ops
    /// (issue 12) still yields every 1 ms. The price: at high fan-out a pass, and so another
    /// client's wait, grows to the cap plus the writes (32 ms plus 12-22 ms at 1→1000 on this
    /// box, as long as the flood lasts), and more is queued per pass (peak RSS 33 → 80 MB at
    /// 1→1000 16 B).
    var passBudgetNs: UInt64 {
        Worker.passBudget(base: server.passBudgetNs, lastWriteNs: lastPassWriteNs)
    }

    /// `passBudgetNs` as a pure function, for tests.
    static func passBudget(base: UInt64, lastWriteNs: UInt64) -> UInt64 {
        guard base > 0 else { return 0 }
        // Both products stay far from overflow: a pass's writes take real time, and
        // `pass_budget_us` is at most one second.
        return min(max(base, lastWriteNs &* linesPerWriteTime), base &* maxBudgetStretch)
    }

    /// Whether the broker had teardown left after this loop's last slice.
    private var hasTeardown = false
    /// Large write buffers kept while their connections stream.
    private(set) lazy var largeBuffers = LargeBufferKeeper(worker: self)
    /// Connections waiting for their user's rate limits (`Connection+Throttle`).
    private(set) lazy var throttled = ThrottleKeeper(worker: self)
    /// Connections paced for a subscriber that fell behind (`PaceKeeper`).
    private(set) lazy var pacer = PaceKeeper(worker: self)
    let inbox: UnsafeMutablePointer<uv_async_t>
    let inboxMutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    var pending: [Message] = []
    /// Set under the inbox lock when the inbox handle closes; later posts are dropped.
    var inboxClosed = false
    /// The hand-off boxes of this loop's plain connections by id, with more than one loop;
    /// guarded by the inbox lock (`Worker+Handoff`).
    var handoffs: [ConnectionID: OutputHandoff] = [:]
    /// Boxes of this loop's connections that wrote handed-off bytes not yet counted under
    /// the broker lock (`OutputHandoff.settle`).
    var unsettled: [OutputHandoff] = []
    private var handlesClosed = false

    init(index: Int, server: Server, shared: SharedBroker) throws(UVError) {
        self.index = index
        self.server = server
        self.shared = shared
        connectionBudgetNs = server.passBudgetNs
        loop = UnsafeMutablePointer<uv_loop_t>.allocate(capacity: 1)
        let status = uv_loop_init(loop)
        guard status == 0 else {
            loop.deallocate()
            throw UVError("loop init", status)
        }
        let size = 64 * 1024
        readBufferBytes = UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: 16)
        readBuffer = uv_buf_init(readBufferBytes.baseAddress?.assumingMemoryBound(to: CChar.self), UInt32(size))
        flushCheck = UnsafeMutablePointer<uv_check_t>.allocate(capacity: 1)
        yieldIdle = UnsafeMutablePointer<uv_idle_t>.allocate(capacity: 1)
        inbox = UnsafeMutablePointer<uv_async_t>.allocate(capacity: 1)
        pthread_mutex_init(inboxMutex, nil)
        startFlushCheck()
        startInbox()
    }

    deinit {
        pthread_mutex_destroy(inboxMutex)
        inboxMutex.deallocate()
        readBufferBytes.deallocate()
        loop.deallocate()
    }

    /// The loop's clock in ms.
    var now: Int { Int(uv_now(loop)) }

    /// Runs the loop until its handles are closed, then closes the loop (handle rule 4).
    func run() {
        uv_run(loop, UV_RUN_DEFAULT)
        let closed = uv_loop_close(loop)
        if closed != 0 {
            server.logger.warn("loop closed with handles open", ["worker": index, "error": UVError("loop close", closed).description])
        }
    }

    /// Queues a message for this loop from any thread.
    ///
    /// `uv_async_send` runs under the inbox lock so it can never race the handle's close.
    func post(_ message: Message) {
        pthread_mutex_lock(inboxMutex)
        defer { pthread_mutex_unlock(inboxMutex) }
        guard !inboxClosed else { return }
        pending.append(message)
        uv_async_send(inbox)
    }

    /// Takes over a connection accepted on this loop's listener.
    func accept(from listener: UnsafeMutablePointer<uv_stream_t>, isTCP: Bool, id: Int, transport: Transport = .plain) {
        do throws(UVError) {
            connections[id] = try Connection(worker: self, source: .listener(listener), isTCP: isTCP, id: id,
                                             tls: transport.isTLS ? server.tlsContext : nil, webSocket: transport.isWebSocket)
        } catch {
            server.logger.warn("accept failed", ["error": error.description])
        }
    }

    /// Forgets a connection that began closing.
    /// Logs why, with the peer's address: auth failures at `info`, slow consumers at `warn`,
    /// routine ends at `debug` (see `CloseReason`).
    func connectionClosed(_ connection: Connection) {
        connections[connection.session.id] = nil
        if connection.handoff != nil { closeHandoff(for: connection.session.id) }
        forgetBackpressured(connection)
        forgetDoubtHeld(connection)
        pacer.forget(connection)
        let server = self.server
        let session = connection.session
        let (wasLast, closing) = shared.withLock { broker -> (Bool, CloseReason?) in
            // A close before any flush took the queue (the loop stopping): the frame is still there.
            let closing = session.closeAfterFlush ? CloseReason.closing(session.outbound) : nil
            broker.disconnect(session)
            return (broker.connectionCount == 0 && server.isStopping, closing)
        }
        let reason = connection.closeReason ?? closing ?? .server
        server.logger.log(reason.level, reason.message, ["client": "c" + String(session.id), "peer": connection.peer,
                                                         "reason": reason.logValue])
        if wasLast { server.postStop() }
    }

    /// Writes every connection with queued bytes: those of this loop now, the others'
    /// through their inboxes. One lock for the whole pass.
    ///
    /// With more than one loop the pass does not wait for the lock: if another loop holds
    /// it, that loop runs a pass of its own after its hold, which does everything here for
    /// every loop (the dirty list is the broker's, and this loop's connections get their
    /// bytes by hand-off), so this loop only leaves its uncounted writes to it and goes back
    /// to its sockets. The main loop waits when it runs the cluster engine (the commands
    /// are taken here).
    func flushDirty() {
        pass &+= 1
        resumeYielded()
        var ready: [Connection] = []
        var rearm = false
        var authEvents: [AuthEvent] = []
        let isMain = self === server.main
        var moreTeardown = false
        var clusterCommands: [ClusterCommand] = []
        var wakeMain = false
        // What the other loops queued for the engine and it has not taken (bytes).
        var clusterWaitingBytes = 0
        // Teardown below can queue cluster work (interest, `$sys` events) after the take.
        var clusterLeftover = false
        let waits = server.workers.count == 1 || (isMain && server.clusterEngine != nil)
        let took = shared.withLock(.flush, waiting: waits) { broker in
            // The engine lives on the main loop: another loop only wakes it.
            if let cluster = broker.cluster, cluster.hasWork, !isMain {
                wakeMain = true
            } else if let cluster = broker.cluster, cluster.hasWork {
                clusterCommands = cluster.takeCommands()
            }
            if broker.hasDeferredWork {
                // A quarter of the pass budget: teardown is background work for a client
                // that left, and an idle loop passes often enough to finish it quickly.
                let start = uv_hrtime()
                let budget = server.passBudgetNs / 4
                broker.continueDeferredWork(isOverBudget: { budget > 0 && uv_hrtime() &- start > budget })
                moreTeardown = broker.hasDeferredWork
            }
            server.drainStateRecords(broker)
            authEvents = broker.takeAuthEvents()
            if !unsettled.isEmpty { settleHandedOff(broker) }
            if pacer.count > 0 { pacer.release(broker) }
            broker.drainDirty { session in
                let owner = server.worker(for: session.id)
                if owner === self {
                    if let connection = connections[session.id], connection.takeQueued() { ready.append(connection) }
                } else if session.closeAfterFlush || !owner.handOff(session) {
                    owner.post(.flush(session.id))
                }
            }
            if !isMain { rearm = server.needsRearm(for: broker.nextDeadline) }
            if broker.cluster?.hasWork == true {
                if isMain { clusterLeftover = true } else { wakeMain = true }
            }
            clusterWaitingBytes = broker.cluster?.outboxBytes ?? 0
        }
        guard took else {
            if !unsettled.isEmpty { leaveUnsettled() }
            hasTeardown = false
            return
        }
        write(ready)
        // The pass's own writes: counted now if the lock is free, else by its holder.
        if !unsettled.isEmpty { leaveUnsettled() }
        if !clusterCommands.isEmpty { server.clusterEngine?.send(clusterCommands) }
        if !clusterWriters.isEmpty && pauseClusterWriters(waitingBytes: clusterWaitingBytes) && !isMain { wakeMain = true }
        if isMain { server.clusterEngine?.updateBackpressure() }
        hasTeardown = moreTeardown
        if moreTeardown { keepAwake() }
        if clusterLeftover { keepAwake() }
        if !authEvents.isEmpty { server.log(authEvents) }
        if isMain {
            server.armTicker()
        } else if rearm || wakeMain {
            server.main.post(.rearm)
        }
    }

    /// A connection spent its line budget for this pass with lines left: it goes on in the
    /// next pass, and the loop must not sleep until then.
    func yielded(_ connection: Connection) {
        yieldedConnections[connection.session.id] = connection
        keepAwake()
    }

    /// Keeps the loop from sleeping in poll until the yielded lines and the broker's queued
    /// teardown (`Broker.continueDeferredWork`, a slice per pass) are done.
    private func keepAwake() {
        if uv_is_active(UnsafeMutableRawPointer(yieldIdle).assumingMemoryBound(to: uv_handle_t.self)) == 0 {
            uv_idle_start(yieldIdle) { _ in }
        }
    }

    /// Gives every connection that yielded in an earlier pass its next budget.
    private func resumeYielded() {
        lastPassWriteNs = passWriteNs
        passWriteNs = 0
        connectionBudgetNs = passBudgetNs / UInt64(max(1, yieldedConnections.count))
        guard !yieldedConnections.isEmpty else {
            if !hasTeardown { uv_idle_stop(yieldIdle) }
            return
        }
        let waiting = yieldedConnections
        yieldedConnections.removeAll(keepingCapacity: true)
        for connection in waiting.values { connection.resumeAfterYield() }
        if yieldedConnections.isEmpty && !hasTeardown { uv_idle_stop(yieldIdle) }
    }

    private func startFlushCheck() {
        uv_idle_init(loop, yieldIdle)
        yieldIdle.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        uv_check_init(loop, flushCheck)
        flushCheck.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        uv_check_start(flushCheck) { check in
            guard let check, let data = check.pointee.data else { return }
            Unmanaged<Worker>.fromOpaque(data).takeUnretainedValue().flushDirty()
        }
    }

    private func startInbox() {
        uv_async_init(loop, inbox) { async in
            guard let async, let data = async.pointee.data else { return }
            Unmanaged<Worker>.fromOpaque(data).takeUnretainedValue().drainInbox()
        }
        inbox.pointee.data = Unmanaged.passUnretained(self).toOpaque()
    }

    private func drainInbox() {
        pthread_mutex_lock(inboxMutex)
        let messages = pending
        pending.removeAll(keepingCapacity: true)
        pthread_mutex_unlock(inboxMutex)
        var flushes = Set<ConnectionID>()
        var handedOff: [ConnectionID] = []
        for message in messages {
            switch message {
            case .adopt(let fd, let isTCP, let id, let transport): adopt(fd: fd, isTCP: isTCP, id: id, transport: transport)
            case .flush(let id): flushes.insert(id)
            case .handoff(let id): handedOff.append(id)
            case .resume(let id): connections[id]?.resumeAfterVerdict()
            case .close(let id): connections[id]?.close()
            case .closeAll: for connection in Array(connections.values) { connection.close() }
            case .rearm: server.armTicker()
            case .resumeReading: resumeBackpressured()
            case .probeLiveness: server.clusterEngine?.livenessDoubted()
            case .resumeDoubtHeld: resumeDoubtHeld()
            case .stop: closeHandles()
            }
        }
        if !flushes.isEmpty { flush(flushes) }
        for id in handedOff { connections[id]?.pumpHandoff() }
    }

    private func flush(_ ids: Set<ConnectionID>) {
        var ready: [Connection] = []
        shared.withLock(.flush) { _ in
            for id in ids {
                if let connection = connections[id], connection.takeQueued() { ready.append(connection) }
            }
        }
        write(ready)
    }

    /// Writes what `takeQueued` took for each of `ready`, adding the time it took to this
    /// pass's write time (see `passBudgetNs`).
    ///
    /// Writes that complete at once (the usual case) are accounted for together under one
    /// broker lock, not one each: with several loops, a loop writing many connections would
    /// otherwise wait for the lock once per connection while another loop holds it for a
    /// whole read.
    private func write(_ ready: [Connection]) {
        guard !ready.isEmpty else { return }
        let start = uv_hrtime()
        var pending = ready
        while !pending.isEmpty {
            var written: [Connection] = []
            for connection in pending where connection.writeTakenAtOnce() {
                // A connection with a hand-off box counts its write at the next pass, and
                // goes on with what was handed over meanwhile, without the lock; one that is
                // closing goes the usual way (its close follows the count).
                if let handoff = connection.handoff, connection.closeReason == nil {
                    connection.noteHandedWritten(handoff)
                    connection.pumpHandoff()
                } else {
                    written.append(connection)
                }
            }
            guard !written.isEmpty else { break }
            pending = accountWritten(written)
        }
        passWriteNs &+= uv_hrtime() &- start
    }

    /// Under one broker lock: `Connection.accountWritten` for each of `written`.
    /// - Returns: the connections that have more to write.
    private func accountWritten(_ written: [Connection]) -> [Connection] {
        var more: [Connection] = []
        var large: [Connection] = []
        shared.withLock(.writes) { broker in
            for connection in written {
                let (again, isLarge) = connection.accountWritten(broker)
                if again { more.append(connection) }
                if isLarge { large.append(connection) }
            }
            if pacer.count > 0 { pacer.release(broker) }
        }
        // Large buffers stay while the connection streams (`LargeBufferKeeper`).
        for connection in large { largeBuffers.hold(connection) }
        return more
    }

    private func adopt(fd: Int32, isTCP: Bool, id: Int, transport: Transport) {
        do throws(UVError) {
            connections[id] = try Connection(worker: self, source: .descriptor(fd), isTCP: isTCP, id: id,
                                             tls: transport.isTLS ? server.tlsContext : nil, webSocket: transport.isWebSocket)
        } catch {
            close(fd)
            server.logger.warn("adopting a connection failed", ["error": error.description])
        }
    }

    /// Closes this loop's own handles so `run` returns (connections are closed first).
    private func closeHandles() {
        guard !handlesClosed else { return }
        handlesClosed = true
        for connection in Array(connections.values) { connection.close() }
        server.closeLoopHandles(of: self)
        largeBuffers.close()
        throttled.close()
        pacer.close()
        yieldedConnections.removeAll()
        uv_close(UnsafeMutableRawPointer(yieldIdle).assumingMemoryBound(to: uv_handle_t.self)) { handle in
            UnsafeMutableRawPointer(handle)?.deallocate()
        }
        uv_close(UnsafeMutableRawPointer(flushCheck).assumingMemoryBound(to: uv_handle_t.self)) { handle in
            UnsafeMutableRawPointer(handle)?.deallocate()
        }
        pthread_mutex_lock(inboxMutex)
        inboxClosed = true
        pthread_mutex_unlock(inboxMutex)
        uv_close(UnsafeMutableRawPointer(inbox).assumingMemoryBound(to: uv_handle_t.self)) { handle in
            UnsafeMutableRawPointer(handle)?.deallocate()
        }
    }
}

