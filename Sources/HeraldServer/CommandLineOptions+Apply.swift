extension CommandLineOptions {
    /// Returns `config` with every flag given on the command line taking precedence.
    ///
    /// Values are checked with the config file's rules, so `--port 70000` fails the way
    /// `port: 70000` does, but the error names the flag the operator actually typed.
    /// - Parameter config: The config from the file (or the defaults).
    /// - Returns: The config the daemon should run with.
    /// - Throws: `ConfigError` naming the flag and the allowed values.
    public func apply(to config: Config) throws(ConfigError) -> Config {
        var result = config
        do throws(ArgumentError) {
            if let host { result.host = try Self.checked(host, .host) }
            if let port { result.port = try Self.checked(port, .port) }
            if let unix { result.unix = try Self.checked(unix, .unix) }
            if let dataDir { result.dataDir = try Self.checked(dataDir, .dataDir) }
            if let workers { result.workers = try Self.checked(workers, .workers) }
            if let logLevel { result.logLevel = logLevel }
        } catch {
            throw ConfigError(error.description)
        }
        return result
    }

    private static func checked(_ value: Int, _ flag: DaemonFlag) throws(ArgumentError) -> Int {
        guard let rule = flag.configKey?.rule, rule.admits(value) else {
            throw .badValue(flag.rawValue, String(value), expected: flag.configKey?.rule.expectation ?? "")
        }
        return value
    }

    private static func checked(_ value: String, _ flag: DaemonFlag) throws(ArgumentError) -> String {
        guard let rule = flag.configKey?.rule, rule.admits(value) else {
            throw .badValue(flag.rawValue, value, expected: flag.configKey?.rule.expectation ?? "")
        }
        return value
    }
}
