import HeraldTLS

extension Config {
    /// Reads the TLS listener's keys; a port without both a certificate and a key is refused,
    /// because a TLS listener that cannot complete a handshake is only a trap for clients.
    mutating func readTLS(_ reader: ConfigFileReader) throws(ConfigProblem) {
        tlsPort = try reader.integer(.tlsPort)
        tlsHost = try reader.string(.tlsHost)
        tlsCert = try reader.string(.tlsCert)
        tlsKey = try reader.string(.tlsKey)
        tlsTimeoutMs = try reader.integer(.tlsTimeoutMs) ?? tlsTimeoutMs
        passBudgetUs = try reader.integer(.passBudgetUs) ?? passBudgetUs
        tlsCiphers = try reader.string(.tlsCiphers) ?? tlsCiphers
        guard tlsPort != nil else { return }
        if tlsCert == nil || tlsKey == nil {
            let missing = [tlsCert == nil ? ConfigKey.tlsCert : nil, tlsKey == nil ? ConfigKey.tlsKey : nil]
                .compactMap { $0?.rawValue }.map { "\"\($0)\"" }
            let verb = missing.count == 1 ? "is" : "are"
            throw ConfigProblem(description: "\"tls_port\" is set but \(missing.joined(separator: " and ")) \(verb) not (both are needed for TLS)")
        }
    }

    /// The TLS keys that differ in `new`; listeners are built once, so all need a restart.
    func tlsKeysNeedingRestart(for new: Config) -> [String] {
        var keys: [String] = []
        if tlsPort != new.tlsPort { keys.append(ConfigKey.tlsPort.rawValue) }
        if tlsHost != new.tlsHost { keys.append(ConfigKey.tlsHost.rawValue) }
        if tlsCert != new.tlsCert { keys.append(ConfigKey.tlsCert.rawValue) }
        if tlsKey != new.tlsKey { keys.append(ConfigKey.tlsKey.rawValue) }
        if tlsCiphers != new.tlsCiphers { keys.append(ConfigKey.tlsCiphers.rawValue) }
        return keys
    }

    /// Loads `tls_cert` and `tls_key` when `tls_port` is set, so a bad file stops start-up
    /// (and `--check-config`) with the key, the path and OpenSSL's reason. `tls_ciphers` is
    /// checked even with TLS off, so a list OpenSSL rejects never waits for the day TLS is turned on.
    /// - Returns: the server context, or nil when TLS is off.
    /// - Throws: `ConfigError` such as `tls_key /etc/herald/key.pem: No such file or directory`
    ///   or `tls_ciphers "RC4": no cipher match`.
    public func makeTLSContext() throws(ConfigError) -> TLSContext? {
        let ciphersLabel = ConfigKey.tlsCiphers.rawValue
        do {
            guard tlsPort != nil || wssPort != nil, let tlsCert, let tlsKey else {
                try TLSContext.checkCipherList(tlsCiphers, label: ciphersLabel)
                return nil
            }
            return try TLSContext.server(certificateFile: tlsCert, keyFile: tlsKey,
                                         certificateLabel: ConfigKey.tlsCert.rawValue, keyLabel: ConfigKey.tlsKey.rawValue,
                                         tls12Ciphers: tlsCiphers, ciphersLabel: ciphersLabel)
        } catch {
            throw ConfigError(error.description)
        }
    }
}
