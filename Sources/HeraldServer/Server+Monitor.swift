import CLibUV
import HeraldWire
import HeraldBroker

extension Server {
    /// Binds the HTTP monitor when `monitor_port` is set (before any listener is announced).
    /// - Throws: UVError when it cannot bind.
    func startMonitor() throws(UVError) {
        guard let port = config.monitorPort else { return }
        monitor = try MonitorListener(server: self, host: config.monitorHost, port: port)
    }

    /// Logs `listening transport=http` with the bound port, as the TCP listener does.
    func announceMonitor() {
        guard let monitor else { return }
        logger.info("listening", ["transport": "http", "host": config.monitorHost,
                                  "port": String(monitor.boundPort ?? config.monitorPort ?? 0)])
    }

    /// Closes the monitor and its connections (when the main loop stops, not when draining
    /// starts: during the drain `/healthz` answers 503, which is what a load balancer needs).
    func stopMonitor() {
        monitor?.close()
        monitor = nil
    }

    /// `/console.json`: where the console finds this node's WebSocket listeners (`null` when
    /// off), the node's name in cluster mode, and the version. The page builds its URL from
    /// the host it was loaded from and this port.
    func consoleInfo() -> [UInt8] {
        let ws = listeners.first { $0.transport == .webSocket }?.boundPort
        let wss = listeners.first { $0.transport == .secureWebSocket }?.boundPort
        var out: [UInt8] = []
        out.append(contentsOf: #"{"ws_port":"#.utf8)
        out.append(contentsOf: (ws.map(String.init) ?? "null").utf8)
        out.append(contentsOf: #","wss_port":"#.utf8)
        out.append(contentsOf: (wss.map(String.init) ?? "null").utf8)
        out.append(contentsOf: #","node":"#.utf8)
        if let node = config.cluster?.node { out.appendJSONString(Array(node.utf8)) } else { out.append(contentsOf: "null".utf8) }
        out.append(contentsOf: #","version":"#.utf8)
        out.appendJSONString(Array(Version.current.utf8))
        out.append(contentsOf: "}".utf8)
        return out
    }

    /// The figures for one `/varz` or `/metrics` answer: one hold of the broker lock.
    func monitorSnapshot() -> MonitorSnapshot {
        let now = main.now
        let (figures, stopping, full, throttled) = shared.withLock { broker in
            (broker.statsFigures(now: now) + shared.lockFigures(), isStopping, broker.dataFolderFault != nil,
             broker.throttledTimes())
        }
        var snapshot = MonitorSnapshot(version: Version.current, isStopping: stopping,
                                       figures: figures + (clusterEngine?.monitorFigures() ?? []),
                                       process: ProcessFigures.read(), wallClockMs: wallClockMilliseconds(),
                                       isDataFolderFull: full)
        snapshot.throttledMsByUser = Dictionary(throttled.map { ($0.user, $0.ms) }, uniquingKeysWith: max)
        return snapshot
    }
}
