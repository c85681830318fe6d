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
        return tunables
    }

    func startSignals() {
        for signum in [SIGTERM, SIGINT, SIGHUP] {
            let handle = UnsafeMutablePointer<uv_signal_t>.allocate(capacity: 1)
            uv_signal_init(loop, handle)
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
            config = config.reloadingLive(from: fresh)
            var tunables = Server.brokerConfig(from: config, epoch: broker.config.epoch)
            tunables.version = broker.config.version
            broker.config = tunables
            for connection in connections.values { connection.setMaxLine(config.maxLine) }
            logger.setLevel(config.logLevel)
            uv_timer_set_repeat(ticker, UInt64(Server.tickInterval(heartbeatMs: config.heartbeatMs)))
            logger.info("reloaded", ["keys": Config.liveKeys.joined(separator: ",")])
        } catch {
            logger.error("reload failed; keeping the running configuration", ["error": String(describing: error)])
        }
    }

    /// Stops accepting, tells every client `shutting_down`, and lets their bytes drain.
    func beginStopping() {
        guard !isStopping else { return }
        isStopping = true
        stopDeadline = now + Server.shutdownGraceMs
        for listener in listeners { listener.close() }
        listeners.removeAll()
        broker.shutdown(now: now)
        flushDirty()
    }

    /// Closes the loop's own handles so `uv_run` returns.
    func finishStopping() {
        guard !handlesClosed else { return }
        handlesClosed = true
        stopPersistence()
        uv_close(UnsafeMutableRawPointer(flushCheck).assumingMemoryBound(to: uv_handle_t.self)) { handle in
            UnsafeMutableRawPointer(handle)?.deallocate()
        }
        uv_close(UnsafeMutableRawPointer(ticker).assumingMemoryBound(to: uv_handle_t.self)) { handle in
            UnsafeMutableRawPointer(handle)?.deallocate()
        }
        for handle in signalHandles {
            uv_close(UnsafeMutableRawPointer(handle).assumingMemoryBound(to: uv_handle_t.self)) { handle in
                UnsafeMutableRawPointer(handle)?.deallocate()
            }
        }
        signalHandles.removeAll()
    }

    /// After `uv_run` returned for an unexpected reason, close whatever is left.
    func closeRemainingHandles() {
        for connection in Array(connections.values) { connection.close() }
        for listener in listeners { listener.close() }
        listeners.removeAll()
        finishStopping()
    }
}
