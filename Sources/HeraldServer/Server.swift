import CLibUV
import HeraldBroker
import HeraldWire
#if canImport(Glibc)
import Glibc
#endif

/// The daemon's edge: one libuv loop with its listeners, connections, timer and signals,
/// carrying out what the broker decides.
///
/// Per loop iteration: read callbacks feed lines to the broker; then the `uv_check`
/// handle flushes every connection the broker marked dirty, one write each. One timer
/// drives heartbeats and close deadlines. `workers` > 1 is accepted but served by this
/// one loop for now (a connection belongs to exactly one loop, so more can be added).
public final class Server {
    /// The loop everything here runs on.
    let loop: UnsafeMutablePointer<uv_loop_t>
    /// The state machine.
    let broker: Broker
    /// Structured log lines.
    let logger: Logger
    /// The read buffer every connection of this loop shares; reads are parsed at once.
    let readBufferBytes: UnsafeMutableRawBufferPointer
    /// The same buffer as libuv wants it.
    let readBuffer: uv_buf_t
    var config: Config
    let reload: (() throws -> Config)?
    var listeners: [Listener] = []
    var connections: [Int: Connection] = [:]
    var nextConnectionID = 1
    let flushCheck: UnsafeMutablePointer<uv_check_t>
    let ticker: UnsafeMutablePointer<uv_timer_t>
    var signalHandles: [UnsafeMutablePointer<uv_signal_t>] = []
    var isStopping = false
    var stopDeadline = 0
    var handlesClosed = false
    /// The state writer and its wake-up handle, when `data_dir` is set (`Server+Persistence`).
    var persistence: Persistence?
    /// State recovered from `data_dir`, handed to the writer when `run` starts.
    let recovered: RecoveredState?

    /// How long shutdown waits for clients to take their last bytes.
    static let shutdownGraceMs = 3_000

    /// Creates the loop and the broker; nothing listens until `run`.
    /// - Parameters:
    ///   - config: the effective configuration.
    ///   - logger: where log lines go.
    ///   - reload: re-reads the configuration on SIGHUP; nil disables reloading.
    ///   - recovered: the state loaded from `data_dir`, or nil to keep state in memory only.
    public init(config: Config, logger: Logger, reload: (() throws -> Config)? = nil,
                recovered: RecoveredState? = nil) throws(UVError) {
        self.config = config
        self.recovered = recovered
        self.logger = logger
        self.reload = reload
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
        ticker = UnsafeMutablePointer<uv_timer_t>.allocate(capacity: 1)
        broker = Broker(config: Server.brokerConfig(from: config, epoch: makeEpoch()),
                        now: Int(uv_now(loop)), wallClock: wallClockMilliseconds)
        if let recovered { broker.restore(recovered.entries) }
    }

    deinit {
        readBufferBytes.deallocate()
        loop.deallocate()
    }

    /// The loop's clock in ms.
    var now: Int { Int(uv_now(loop)) }

    /// Listens, serves until SIGTERM/SIGINT, then drains and closes everything.
    /// - Parameter onListening: called once with the bound TCP port, before serving.
    /// - Throws: UVError when a listener cannot be set up.
    public func run(onListening: (Int) -> Void = { _ in }) throws(UVError) {
        if let recovered, let directory = config.dataDir { startPersistence(recovered, directory: directory) }
        try startListeners()
        startFlushCheck()
        startTicker()
        startSignals()
        onListening(listeners.first?.boundPort ?? config.port)
        uv_run(loop, UV_RUN_DEFAULT)
        closeRemainingHandles()
        uv_run(loop, UV_RUN_DEFAULT)
        let closed = uv_loop_close(loop)
        if closed != 0 { logger.warn("loop closed with handles open", ["error": UVError("loop close", closed).description]) }
        logger.info("stopped")
    }

    private func startListeners() throws(UVError) {
        let tcp = try Listener(server: self, endpoint: .tcp(host: config.host, port: config.port))
        listeners.append(tcp)
        logger.info("listening", ["transport": "tcp", "host": config.host, "port": String(tcp.boundPort ?? config.port)])
        if let path = config.unix {
            listeners.append(try Listener(server: self, endpoint: .unix(path: path)))
            logger.info("listening", ["transport": "unix", "path": path])
        }
    }

    /// Accepts one connection from a listener.
    func accept(from listener: UnsafeMutablePointer<uv_stream_t>, isTCP: Bool) {
        let id = nextConnectionID
        nextConnectionID += 1
        do throws(UVError) {
            let connection = try Connection(server: self, listener: listener, isTCP: isTCP, id: id)
            connections[id] = connection
            logger.debug("connected", ["client": "c" + String(id)])
        } catch {
            logger.warn("accept failed", ["error": error.description])
        }
    }

    /// Forgets a connection that began closing.
    func connectionClosed(_ connection: Connection) {
        connections[connection.session.id] = nil
        broker.disconnect(connection.session)
        logger.debug("disconnected", ["client": "c" + String(connection.session.id)])
    }

    private func startFlushCheck() {
        uv_check_init(loop, flushCheck)
        flushCheck.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        uv_check_start(flushCheck) { check in
            guard let check, let data = check.pointee.data else { return }
            Unmanaged<Server>.fromOpaque(data).takeUnretainedValue().flushDirty()
        }
    }

    /// Writes every connection with queued bytes: one write each per loop iteration.
    func flushDirty() {
        drainStateRecords()
        broker.drainDirty { session in connections[session.id]?.flush() }
        if isStopping && connections.isEmpty { finishStopping() }
    }

    private func startTicker() {
        uv_timer_init(loop, ticker)
        ticker.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        let interval = UInt64(Server.tickInterval(heartbeatMs: config.heartbeatMs))
        uv_timer_start(ticker, { timer in
            guard let timer, let data = timer.pointee.data else { return }
            Unmanaged<Server>.fromOpaque(data).takeUnretainedValue().tick()
        }, interval, interval)
    }

    /// A quarter of the heartbeat, within 10 ms … 1 s, so pings are late by at most that.
    static func tickInterval(heartbeatMs: Int) -> Int {
        heartbeatMs > 0 ? min(1_000, max(10, heartbeatMs / 4)) : 1_000
    }

    private func tick() {
        let now = self.now
        for session in broker.tick(now: now) { connections[session.id]?.close() }
        flushDirty()
        if isStopping && now >= stopDeadline {
            for connection in Array(connections.values) { connection.close() }
            finishStopping()
        }
    }
}
