import CLibUV
import HeraldBroker
import HeraldTLS
import HeraldWire
#if canImport(Glibc)
import Glibc
#endif

/// The daemon's edge: `workers` libuv loops on their own threads, carrying out what the
/// one broker decides.
///
/// Worker 0 runs on the calling thread and also owns the listeners, the timer and the
/// signal handles. Accepted connections are spread over the workers round robin
/// (connection `id % workers`); each stays on its loop for life.
public final class Server {
    /// The broker behind its lock.
    let shared: SharedBroker
    /// Structured log lines.
    let logger: Logger
    var config: Config
    let reload: (() throws -> Config)?
    var workers: [Worker] = []
    var listeners: [Listener] = []
    /// The HTTP monitoring listener, when `monitor_port` is set (`Server+Monitor`).
    var monitor: MonitorListener?
    var nextConnectionID = 1
    /// Cluster mode's engine on the main loop (docs/cluster.md); nil when running alone.
    var clusterEngine: ClusterEngine?
    /// Cluster backpressure shared by every loop (`ClusterBackpressure`); nil when running
    /// alone.
    let clusterBackpressure: ClusterBackpressure?
    /// Until when the node surely lives in the cluster (`ClusterLiveness`): past it the loops
    /// hold client lines; nil when running alone.
    let clusterLiveness: ClusterLiveness?
    let ticker: UnsafeMutablePointer<uv_timer_t>
    /// When `ticker` is armed to fire (loop ms), or -1 when it is not (see `Server+Ticker`).
    var tickerDue = -1
    /// When the next heartbeat scan is due (loop ms).
    var nextHeartbeatTick = 0
    /// When freed heap memory was last given back to the system (`Server+MemoryReturn`).
    var lastMemoryReturn = 0
    /// malloc's free heap bytes at the last trim, lowered as they are used again.
    var trimmedFreeBytes = 0
    var signalHandles: [UnsafeMutablePointer<uv_signal_t>] = []
    /// Set (under the broker lock) once SIGTERM/SIGINT arrived; read by workers under it.
    var isStopping = false
    var tickerStarted = false
    /// The time the main timer is armed for, readable by any loop under the broker lock.
    var armedDue = Int.max
    var stopDeadline = 0
    var stopPosted = false
    /// The state writer and its wake-up handle, when `data_dir` is set (`Server+Persistence`).
    var persistence: Persistence?
    /// State recovered from `data_dir`, handed to the writer when `run` starts.
    let recovered: RecoveredState?
    /// The certificate and key for connections from the TLS listener; nil when TLS is off.
    let tlsContext: TLSContext?
    /// `tls_timeout_ms` for connections accepted from now on; live on SIGHUP, so written and
    /// read under the broker lock like `isStopping`.
    var tlsTimeoutMs: Int
    /// `ws_origins`, read by each upgrade under the broker lock (a reload changes it there).
    var wsOrigins: [String]
    /// `pass_budget_us` in ns (0: no limit); fixed at start, read by every loop.
    let passBudgetNs: UInt64

    /// How long shutdown waits for clients to take their last bytes.
    static let shutdownGraceMs = 3_000

    /// Creates the broker and the workers' loops; nothing listens until `run`.
    /// - Parameters:
    ///   - config: the effective configuration.
    ///   - logger: where log lines go.
    ///   - reload: re-reads the configuration on SIGHUP; nil disables reloading.
    ///   - recovered: the state loaded from `data_dir`, or nil to keep state in memory only.
    ///   - tls: the server context (`Config.makeTLSContext()`) when `tls_port` is set.
    public convenience init(config: Config, logger: Logger, reload: (() throws -> Config)? = nil,
                            recovered: RecoveredState? = nil, tls: TLSContext? = nil) throws(UVError) {
        try self.init(config: config, logger: logger, reload: reload, recovered: recovered, tls: tls, cluster: nil)
    }

    /// The same, as a node of a cluster it joined (`ClusterJoin`, docs/cluster.md).
    init(config: Config, logger: Logger, reload: (() throws -> Config)?, recovered: RecoveredState?,
         tls: TLSContext?, cluster join: ClusterJoin?) throws(UVError) {
        self.config = config
        self.tlsContext = tls
        self.tlsTimeoutMs = config.tlsTimeoutMs
        self.wsOrigins = config.wsOrigins
        self.passBudgetNs = UInt64(config.passBudgetUs) * 1_000
        self.recovered = recovered
        self.logger = logger
        self.reload = reload
        clusterBackpressure = join == nil ? nil : config.cluster.map(ClusterBackpressure.init(settings:))
        clusterLiveness = join == nil || config.cluster == nil ? nil : ClusterLiveness()
        ticker = UnsafeMutablePointer<uv_timer_t>.allocate(capacity: 1)
        let cluster = join.flatMap { join in
            config.cluster.map { settings in ClusterState(nodeIndex: join.nodeIndex, nodeName: settings.node) }
        }
        let broker = Broker(config: Server.brokerConfig(from: config, epoch: join?.epoch ?? makeEpoch()),
                            now: Int(uv_hrtime() / 1_000_000), wallClock: wallClockMilliseconds, cluster: cluster)
        if let recovered { broker.restore(recovered.entries, revFloor: recovered.revFloor) }
        shared = SharedBroker(broker, measured: config.workers > 1)
        for index in 0..<max(1, config.workers) {
            workers.append(try Worker(index: index, server: self, shared: shared))
        }
        if let join, let settings = config.cluster {
            var joined = settings
            if settings.sentinel != nil && settings.waitReplicas == 0 && settings.waitReplicasIsDefault {
                // Under Sentinel the safe setting is the default (issue 31): a state write is
                // acknowledged once a replica has it, so a failover cannot lose it.
                joined.waitReplicas = join.replicas > 0 ? 1 : 0
                logger.info("cluster: wait_replicas not set; under Sentinel it is 1 when the primary has a replica",
                            ["replicas": join.replicas, "wait_replicas": joined.waitReplicas])
            }
            broker.cluster?.pipelinesStateOps = joined.waitReplicas == 0
            nextConnectionID = (join.nodeIndex << 32) | 1
            joined.redisHost = join.primary.host
            joined.redisPort = join.primary.port
            // A data shard under Sentinel starts where its sentinels say (its links ask
            // again on every reconnect; one that cannot be asked now is asked then).
            for index in joined.otherShards.indices {
                guard let sentinel = joined.otherShards[index].sentinel,
                      let primary = try? SentinelLookup.primary(of: sentinel, credentials: joined.otherShards[index].credentials)
                else { continue }
                joined.otherShards[index].host = primary.host
                joined.otherShards[index].port = primary.port
            }
            clusterEngine = ClusterEngine(settings: joined, nodeIndex: join.nodeIndex, server: self, loop: workers[0].loop)
        }
        warnAboutPlainTokens(config)
        warnAboutFastHashes(config)
        warnAboutHistory(config)
    }

    /// The first loop: listeners, timer and signals live on it.
    var main: Worker { workers[0] }

    /// The loop that owns connection `id`.
    func worker(for id: ConnectionID) -> Worker { workers[id % workers.count] }

    /// Listens, serves until SIGTERM/SIGINT, then drains and closes everything.
    /// - Parameter onListening: called once with the bound TCP port, before serving.
    /// - Throws: UVError when a listener cannot be set up.
    public func run(onListening: (Int) -> Void = { _ in }) throws(UVError) {
        if let recovered, let directory = config.dataDir { startPersistence(recovered, directory: directory) }
        do throws(UVError) {
            try startListeners()
        } catch {
            for worker in workers { worker.post(.stop) }
            for worker in workers { worker.run() }
            throw error
        }
        clusterEngine?.start()
        startTicker()
        startSignals()
        onListening(listeners.first?.boundPort ?? config.port)
        let threads = workers.dropFirst().map { worker in LoopThread(worker) }
        main.run()
        for thread in threads { thread.join() }
        logger.info("stopped")
    }

    private func startListeners() throws(UVError) {
        // Every listener is bound before any is announced, so a client that waits for the
        // first "listening" line finds them all.
        let tcp = try Listener(server: self, endpoint: .tcp(host: config.host, port: config.port))
        listeners.append(tcp)
        let tls = try startTLSListener()
        let webSockets = try startWebSocketListeners()
        let unix = try config.unix.map { path throws(UVError) in
            try Listener(server: self, endpoint: .unix(path: path, mode: config.unixMode))
        }
        if let unix { listeners.append(unix) }
        try startMonitor()
        logger.info("listening", ["transport": "tcp", "host": config.host, "port": String(tcp.boundPort ?? config.port)])
        if let tls { announceTLS(tls) }
        for (listener, name, host) in webSockets {
            logger.info("listening", ["transport": name, "host": host, "port": String(listener.boundPort ?? 0)])
        }
        if let unix, let path = config.unix {
            if unix.removedStaleSocket { logger.info("removed a stale unix socket (nobody answered on it)", ["path": path]) }
            logger.info("listening", ["transport": "unix", "path": path, "mode": OctalMode.text(config.unixMode)])
        }
        announceMonitor()
    }

    /// Accepts one connection from a listener (on the main loop) and gives it to a worker.
    func accept(from listener: UnsafeMutablePointer<uv_stream_t>, isTCP: Bool, transport: Transport = .plain) {
        let id = nextConnectionID
        nextConnectionID += 1
        let owner = worker(for: id)
        if owner === main {
            main.accept(from: listener, isTCP: isTCP, id: id, transport: transport)
        } else if let fd = Listener.acceptDescriptor(from: listener, loop: main.loop, isTCP: isTCP) {
            owner.post(.adopt(fd: fd, isTCP: isTCP, id: id, transport: transport))
        } else {
            logger.warn("accept failed", ["client": "c" + String(id)])
        }
    }
}

/// A thread running one worker's loop.
final class LoopThread {
    private var thread = pthread_t()

    init(_ worker: Worker) {
        let box = Unmanaged.passRetained(worker).toOpaque()
        pthread_create(&thread, nil, { argument in
            guard let argument else { return nil }
            let worker = Unmanaged<Worker>.fromOpaque(argument).takeRetainedValue()
            worker.run()
            return nil
        }, box)
    }

    func join() { pthread_join(thread, nil) }
}
