extension Server {
    /// Binds the TLS listener when `tls_port` is set (on `tls_host`, else `host`).
    /// - Returns: the listener, already in `listeners`, or nil when TLS is off.
    /// - Throws: UVError when binding fails (e.g. the port is taken).
    func startTLSListener() throws(UVError) -> Listener? {
        guard let port = config.tlsPort, tlsContext != nil else { return nil }
        let listener = try Listener(server: self, endpoint: .tcp(host: config.tlsHost ?? config.host, port: port), transport: .tls)
        listeners.append(listener)
        return listener
    }

    /// Logs the TLS listener's bound port (tests with `tls_port: 0` read it from this line).
    func announceTLS(_ listener: Listener) {
        logger.info("listening", ["transport": "tls", "host": config.tlsHost ?? config.host,
                                  "port": String(listener.boundPort ?? config.tlsPort ?? 0)])
    }
}
