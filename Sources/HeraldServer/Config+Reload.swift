extension Config {
    /// Returns this config with only the live-changeable keys taken from `new`.
    ///
    /// SIGHUP reloads the file, but listeners, the data directory and worker threads were built
    /// at start-up; keeping their old values keeps the config describing what actually runs.
    /// - Parameter new: The freshly loaded config.
    /// - Returns: `self` with `liveKeys` (log level, limits, heartbeat, slow-consumer policy) from `new`.
    public func reloadingLive(from new: Config) -> Config {
        var merged = self
        merged.logLevel = new.logLevel
        merged.maxLine = new.maxLine
        merged.maxErrors = new.maxErrors
        merged.heartbeatMs = new.heartbeatMs
        merged.maxPending = new.maxPending
        merged.slowConsumer = new.slowConsumer
        merged.history = new.history
        merged.historyBytes = new.historyBytes
        merged.maxValueBytes = new.maxValueBytes
        merged.maxListLength = new.maxListLength
        merged.maxRetainedBytes = new.maxRetainedBytes
        merged.maxConnections = new.maxConnections
        merged.maxSubs = new.maxSubs
        merged.maxChannels = new.maxChannels
        merged.maxRequests = new.maxRequests
        merged.maxSignals = new.maxSignals
        merged.monitorTimeoutMs = new.monitorTimeoutMs
        merged.monitorAuth = new.monitorAuth
        merged.maxLocks = new.maxLocks
        merged.maxArgsBytes = new.maxArgsBytes
        merged.presenceMaxMembers = new.presenceMaxMembers
        merged.presenceGraceMs = new.presenceGraceMs
        merged.maxInfoBytes = new.maxInfoBytes
        merged.dedupWindowMs = new.dedupWindowMs
        merged.maxDedupIDs = new.maxDedupIDs
        merged.maxConnArgsBytes = new.maxConnArgsBytes
        merged.maxArgsTotal = new.maxArgsTotal
        merged.maxDeclared = new.maxDeclared
        merged.maxLinks = new.maxLinks
        merged.maxPendingTotal = new.maxPendingTotal
        merged.pacePending = new.pacePending
        merged.authUsers = new.authUsers
        merged.authTimeoutMs = new.authTimeoutMs
        merged.authMaxLine = new.authMaxLine
        merged.tlsTimeoutMs = new.tlsTimeoutMs
        merged.wsOrigins = new.wsOrigins
        merged.maxUnauthenticated = new.maxUnauthenticated
        merged.authFailLimit = new.authFailLimit
        merged.authFailWindowMs = new.authFailWindowMs
        merged.authBlockMs = new.authBlockMs
        merged.userLimits = new.userLimits
        merged.diskFullTimeoutMs = new.diskFullTimeoutMs
        merged.maxWriterQueueBytes = new.maxWriterQueueBytes
        return merged
    }

    /// Names the keys that differ in `new` but only take effect after a restart.
    ///
    /// Lets a SIGHUP handler warn "port changed; restart to apply" instead of ignoring it silently.
    /// - Parameter new: The freshly loaded config.
    /// - Returns: Snake_case keys, in file order; empty when a reload applies everything.
    public func keysNeedingRestart(for new: Config) -> [String] {
        var keys: [String] = []
        if host != new.host { keys.append(ConfigKey.host.rawValue) }
        if port != new.port { keys.append(ConfigKey.port.rawValue) }
        if unix != new.unix { keys.append(ConfigKey.unix.rawValue) }
        if unixMode != new.unixMode { keys.append(ConfigKey.unixMode.rawValue) }
        if dataDir != new.dataDir { keys.append(ConfigKey.dataDir.rawValue) }
        if workers != new.workers { keys.append(ConfigKey.workers.rawValue) }
        if fsync != new.fsync { keys.append(ConfigKey.fsync.rawValue) }
        if compactMinBytes != new.compactMinBytes { keys.append(ConfigKey.compactMinBytes.rawValue) }
        if monitorPort != new.monitorPort { keys.append(ConfigKey.monitorPort.rawValue) }
        if monitorHost != new.monitorHost { keys.append(ConfigKey.monitorHost.rawValue) }
        keys += tlsKeysNeedingRestart(for: new)
        if wsPort != new.wsPort { keys.append(ConfigKey.wsPort.rawValue) }
        if wssPort != new.wssPort { keys.append(ConfigKey.wssPort.rawValue) }
        if cluster != new.cluster { keys.append(ConfigKey.cluster.rawValue) }
        return keys
    }
}
