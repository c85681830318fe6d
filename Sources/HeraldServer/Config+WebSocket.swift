extension Config {
    /// Reads the WebSocket listeners' keys (issue 34): `ws_port`, `wss_port` (which needs
    /// `tls_cert` and `tls_key`, as `tls_port` does) and `ws_origins`.
    mutating func readWebSocket(_ reader: ConfigFileReader) throws(ConfigProblem) {
        wsPort = try reader.integer(.wsPort)
        wssPort = try reader.integer(.wssPort)
        let key = ConfigCodingKey(.wsOrigins)
        if reader.container.contains(key), (try? reader.container.decodeNil(forKey: key)) != true {
            guard let origins = try? reader.container.decode([String].self, forKey: key),
                  origins.allSatisfy({ !$0.isEmpty && $0.utf8.count <= 256 }), origins.count <= 1_000 else {
                throw .badValue(.wsOrigins, found: "not a list of up to 1,000 origins (strings of 1 to 256 bytes)")
            }
            wsOrigins = origins
        }
        if wssPort != nil && (tlsCert == nil || tlsKey == nil) {
            throw ConfigProblem(description: "\"wss_port\" is set but \"tls_cert\" and \"tls_key\" are not both set (both are needed for TLS)")
        }
    }
}
