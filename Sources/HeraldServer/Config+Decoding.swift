import Foundation

extension Config: Decodable {
    /// Loads and validates a JSON5 config file.
    ///
    /// Every key is optional; a missing key keeps its default. Start-up and SIGHUP both use this.
    /// - Parameter path: The file to read, e.g. `config/heraldd.json5`.
    /// - Returns: The config described by the file.
    /// - Throws: `ConfigError` naming the file and, for a bad key or value, the key and the allowed values.
    public static func load(path: String) throws(ConfigError) -> Config {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            let reason = FileManager.default.fileExists(atPath: path) ? "cannot read the file" : "no such file"
            throw ConfigError("\(path): \(reason)")
        }
        return try decode(json5: data, source: path)
    }

    /// Decodes and validates config text already in memory.
    ///
    /// Separate from `load(path:)` so tests and tools can check text without a file.
    /// - Parameters:
    ///   - data: UTF-8 JSON5 text: comments, trailing commas, unquoted keys and single quotes allowed.
    ///   - source: The name to put in error messages, normally the file's path.
    /// - Returns: The config described by the text.
    /// - Throws: `ConfigError` whose description starts with `source`.
    public static func decode(json5 data: Data, source: String) throws(ConfigError) -> Config {
        let decoder = JSONDecoder()
        // Verified on Linux swift-corelibs-foundation (Swift 6.3): comments, trailing commas,
        // unquoted keys, single quotes and hex numbers all decode, so no preprocessor is needed.
        decoder.allowsJSON5 = true
        do {
            return try decoder.decode(Config.self, from: data)
        } catch let problem as ConfigProblem {
            throw ConfigError("\(source): \(problem.description)")
        } catch DecodingError.typeMismatch, DecodingError.valueNotFound {
            throw ConfigError("\(source): the top level must be an object: { key: value, … }")
        } catch {
            // Foundation reports no line or column for JSON5 syntax errors, so neither can we.
            throw ConfigError("\(source): not valid JSON5 (look for a missing comma, quote or brace)")
        }
    }

    /// Decodes a config, rejecting unknown keys and values outside their rules.
    ///
    /// Throws `ConfigProblem` (without a file name); use `Config.decode(json5:source:)` for
    /// operator-facing errors.
    /// - Parameter decoder: A decoder positioned at the top-level object.
    public init(from decoder: any Decoder) throws {
        let reader = ConfigFileReader(container: try decoder.container(keyedBy: ConfigCodingKey.self))
        try reader.rejectUnknownKeys()
        self.init()
        try readListeners(reader)
        try readLimits(reader)
        try readTLS(reader)
        try readWebSocket(reader)
        if let problem = historyProblem(memory: Config.physicalMemory) { throw problem }
        if monitorAuth && !authUsers.contains(where: \.isAdmin) {
            throw ConfigProblem(description: "\"monitor_auth\": true needs a user with admin: true in auth.users "
                + "(the monitor would let no one in)")
        }
    }

    /// Keys fixed at start-up: where to listen, where to store, how many threads.
    private mutating func readListeners(_ reader: ConfigFileReader) throws(ConfigProblem) {
        host = try reader.string(.host) ?? host
        port = try reader.integer(.port) ?? port
        unix = try reader.string(.unix)
        unixMode = try reader.string(.unixMode).flatMap(OctalMode.bits) ?? unixMode
        dataDir = try reader.string(.dataDir)
        workers = try reader.integer(.workers) ?? workers
        fsync = try reader.choice(.fsync, as: FsyncPolicy.self) ?? fsync
        compactMinBytes = try reader.integer(.compactMinBytes) ?? compactMinBytes
        monitorPort = try reader.integer(.monitorPort)
        monitorHost = try reader.string(.monitorHost) ?? monitorHost
        cluster = try reader.clusterSettings()
    }

    /// Keys SIGHUP may change: logging, limits, heartbeat, slow-consumer policy.
    private mutating func readLimits(_ reader: ConfigFileReader) throws(ConfigProblem) {
        logLevel = try reader.choice(.logLevel, as: LogLevel.self) ?? logLevel
        maxLine = try reader.integer(.maxLine) ?? maxLine
        maxErrors = try reader.integer(.maxErrors) ?? maxErrors
        heartbeatMs = try reader.integer(.heartbeatMs) ?? heartbeatMs
        maxPending = try reader.integer(.maxPending) ?? maxPending
        slowConsumer = try reader.choice(.slowConsumer, as: SlowConsumerPolicy.self) ?? slowConsumer
        history = try reader.integer(.history) ?? history
        historyBytes = try reader.integer(.historyBytes) ?? historyBytes
        maxValueBytes = try reader.integer(.maxValueBytes) ?? maxValueBytes
        maxListLength = try reader.integer(.maxListLength) ?? maxListLength
        maxRetainedBytes = try reader.integer(.maxRetainedBytes) ?? maxRetainedBytes
        maxConnections = try reader.integer(.maxConnections) ?? maxConnections
        maxSubs = try reader.integer(.maxSubs) ?? maxSubs
        maxChannels = try reader.integer(.maxChannels) ?? maxChannels
        maxRequests = try reader.integer(.maxRequests) ?? maxRequests
        maxSignals = try reader.integer(.maxSignals) ?? maxSignals
        monitorTimeoutMs = try reader.integer(.monitorTimeoutMs) ?? monitorTimeoutMs
        monitorAuth = try reader.boolean(.monitorAuth) ?? monitorAuth
        maxLocks = try reader.integer(.maxLocks) ?? maxLocks
        maxArgsBytes = try reader.integer(.maxArgsBytes) ?? maxArgsBytes
        presenceMaxMembers = try reader.integer(.presenceMaxMembers) ?? presenceMaxMembers
        presenceGraceMs = try reader.integer(.presenceGraceMs) ?? presenceGraceMs
        maxInfoBytes = try reader.integer(.maxInfoBytes) ?? maxInfoBytes
        dedupWindowMs = try reader.integer(.dedupWindowMs) ?? dedupWindowMs
        maxDedupIDs = try reader.integer(.maxDedupIDs) ?? maxDedupIDs
        maxConnArgsBytes = try reader.integer(.maxConnArgsBytes) ?? maxConnArgsBytes
        maxArgsTotal = try reader.integer(.maxArgsTotal) ?? maxArgsTotal
        maxDeclared = try reader.integer(.maxDeclared) ?? maxDeclared
        maxLinks = try reader.integer(.maxLinks) ?? maxLinks
        maxPendingTotal = try reader.integer(.maxPendingTotal) ?? maxPendingTotal
        pacePending = try reader.integer(.pacePending) ?? pacePending
        authTimeoutMs = try reader.integer(.authTimeoutMs) ?? authTimeoutMs
        authMaxLine = try reader.integer(.authMaxLine) ?? authMaxLine
        maxUnauthenticated = try reader.integer(.maxUnauthenticated) ?? maxUnauthenticated
        authFailLimit = try reader.integer(.authFailLimit) ?? authFailLimit
        authFailWindowMs = try reader.integer(.authFailWindowMs) ?? authFailWindowMs
        authBlockMs = try reader.integer(.authBlockMs) ?? authBlockMs
        diskFullTimeoutMs = try reader.integer(.diskFullTimeoutMs) ?? diskFullTimeoutMs
        maxWriterQueueBytes = try reader.integer(.maxWriterQueueBytes) ?? maxWriterQueueBytes
        userLimits = try reader.userLimits() ?? userLimits
        authUsers = try reader.authUsers(limits: userLimits) ?? authUsers
    }
}
