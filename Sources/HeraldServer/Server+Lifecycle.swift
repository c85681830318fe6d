import CLibUV
import HeraldBroker
#if canImport(Glibc)
import Glibc
#endif

extension Server {
    /// Maps the daemon's configuration onto the broker's tunables.
    static func brokerConfig(from config: Config, epoch: String) -> BrokerConfig {
        var tunables = BrokerConfig(
            maxLine: config.maxLine, maxErrors: config.maxErrors, heartbeatMs: config.heartbeatMs,
            maxPending: config.maxPending, overflow: config.slowConsumer == .drop ? .drop : .disconnect,
            version: Version.current, epoch: epoch)
        tunables.history = config.history
        tunables.historyBytes = config.historyBytes
        tunables.stateLimits = StateLimits(
            maxValueBytes: config.maxValueBytes, maxListLength: config.maxListLength,
            maxRetainedBytes: config.maxRetainedBytes)
        tunables.journaling = config.dataDir != nil
        tunables.diskFullTimeoutMs = config.diskFullTimeoutMs
        tunables.maxWriterQueueBytes = config.maxWriterQueueBytes
        tunables.maxConnections = config.maxConnections
        tunables.maxSubs = config.maxSubs
        tunables.maxChannels = config.maxChannels
        tunables.maxRequests = config.maxRequests
        tunables.maxSignals = config.maxSignals
        tunables.maxLocks = config.maxLocks
        tunables.maxArgsBytes = config.maxArgsBytes
        tunables.presenceMaxMembers = config.presenceMaxMembers
        tunables.presenceGraceMs = config.presenceGraceMs
        tunables.maxInfoBytes = config.maxInfoBytes
        tunables.dedupWindowMs = config.dedupWindowMs
        tunables.maxDedupIDs = config.maxDedupIDs
        tunables.maxConnArgsBytes = config.maxConnArgsBytes
        tunables.maxArgsTotal = config.maxArgsTotal
        tunables.maxDeclared = config.maxDeclared
        tunables.maxLinks = config.maxLinks
        tunables.maxPendingTotal = config.maxPendingTotal
        // With more than one loop the subscriber's writes do not wake the publisher's loop,
        // so every pause would run to its time limit (`Broker+Pacing`).
        tunables.pacePending = config.pacePending > 0 && config.workers == 1 ? config.pacePending : Int.max
        tunables.auth = AuthSettings(users: config.authUsers, timeoutMs: config.authTimeoutMs, maxLine: config.authMaxLine)
        tunables.auth.maxUnauthenticated = config.maxUnauthenticated
        tunables.auth.failLimit = config.authFailLimit
        tunables.auth.failWindowMs = config.authFailWindowMs
        tunables.auth.blockMs = config.authBlockMs
        return tunables
    }

    func startSignals() {
        for signum in [SIGTERM, SIGINT, SIGHUP] {
            let handle = UnsafeMutablePointer<uv_signal_t>.allocate(capacity: 1)
            uv_signal_init(main.loop, handle)
            handle.pointee.data = Unmanaged.passUnretained(self).toOpaque()
            uv_signal_start(handle, { handle, signum in
                guard let handle, let data = handle.pointee.data else { return }
                Unmanaged<Server>.fromOpaque(data).takeUnretainedValue().received(signal: signum)
            }, signum)
            signalHandles.append(handle)
        }
    }

    private func received(signal signum: Int32) {
        if signum == SIGHUP {
            reloadConfig()
        } else {
            logger.info("stopping", ["signal": signum == SIGTERM ? "SIGTERM" : "SIGINT"])
            beginStopping()
        }
    }

    /// SIGHUP: takes the live-changeable keys from the re-read file; the rest needs a restart.
    private func reloadConfig() {
        guard let reload else { return }
        do {
            let fresh = try reload()
            let restart = config.keysNeedingRestart(for: fresh)
            config = config.reloadingLive(from: fresh)
            let live = config
            let now = main.now
            shared.withLock { broker in
                var tunables = Server.brokerConfig(from: live, epoch: broker.config.epoch)
                tunables.version = broker.config.version
                broker.config = tunables
                tlsTimeoutMs = live.tlsTimeoutMs
                wsOrigins = live.wsOrigins
                broker.applyAuthSettings(now: now)
            }
            warnAboutPlainTokens(config)
            warnAboutFastHashes(config)
            warnAboutHistory(config)
            logger.setLevel(config.logLevel)
            nextHeartbeatTick = min(nextHeartbeatTick, main.now + Server.tickInterval(heartbeatMs: config.heartbeatMs))
            armTicker()
            logger.info("reloaded", ["keys": Config.liveKeys.joined(separator: ",")])
            if !restart.isEmpty {
                logger.warn("changed keys need a restart", ["keys": restart.joined(separator: ",")])
            }
        } catch {
            logger.error("reload failed; keeping the running configuration", ["error": String(describing: error)])
        }
    }

    /// Stops accepting, tells every client `shutting_down`, and lets their bytes drain.
    func beginStopping() {
        guard !isStopping else { return }
        stopDeadline = main.now + Server.shutdownGraceMs
        for listener in listeners { listener.close() }
        listeners.removeAll()
        let now = main.now
        let remaining = shared.withLock { broker -> Int in
            isStopping = true
            broker.shutdown(now: now)
            return broker.connectionCount
        }
        main.flushDirty()
        if remaining == 0 { postStop() }
    }

    /// Tells every loop to close its handles (once).
    func postStop() {
        shared.withLock { _ in
            if stopPosted { return }
            stopPosted = true
            for worker in workers { worker.post(.stop) }
        }
    }

    /// The main loop's extra handles (timer, signals, listeners) close with it.
    func closeLoopHandles(of worker: Worker) {
        guard worker === main else { return }
        stopPersistence()
        stopMonitor()
        if let engine = clusterEngine {
            engine.close()
            ClusterJoin.leave(engine.currentSettings, nodeIndex: engine.nodeIndex)
            clusterEngine = nil
        }
        for listener in listeners { listener.close() }
        listeners.removeAll()
        if tickerStarted {
            tickerStarted = false
            uv_close(UnsafeMutableRawPointer(ticker).assumingMemoryBound(to: uv_handle_t.self)) { handle in
                UnsafeMutableRawPointer(handle)?.deallocate()
            }
        }
        for handle in signalHandles {
            uv_close(UnsafeMutableRawPointer(handle).assumingMemoryBound(to: uv_handle_t.self)) { handle in
                UnsafeMutableRawPointer(handle)?.deallocate()
            }
        }
        signalHandles.removeAll()
    }
}
