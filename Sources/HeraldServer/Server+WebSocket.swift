extension Server {
    /// Binds the WebSocket listeners (issue 34): `ws_port` on `host`, and `wss_port` (TLS)
    /// on `tls_host`, else `host`.
    /// - Returns: each listener with its name for the log (`ws`, `wss`), already in `listeners`.
    /// - Throws: UVError when binding fails (e.g. the port is taken).
    func startWebSocketListeners() throws(UVError) -> [(listener: Listener, name: String, host: String)] {
        var started: [(listener: Listener, name: String, host: String)] = []
        if let port = config.wsPort {
            let listener = try Listener(server: self, endpoint: .tcp(host: config.host, port: port), transport: .webSocket)
            listeners.append(listener)
            started.append((listener, "ws", config.host))
        }
        if let port = config.wssPort, tlsContext != nil {
            let host = config.tlsHost ?? config.host
            let listener = try Listener(server: self, endpoint: .tcp(host: host, port: port), transport: .secureWebSocket)
            listeners.append(listener)
            started.append((listener, "wss", host))
        }
        return started
    }
}
