import HeraldBroker

/// The node's share of the history byte count (`ClusterHistoryScripts`): the scripts keep
/// runs without counting their bytes in Redis (a counter per call is a sixth of a publish's
/// cost there); the node adds up what it kept and calls `settle` each time that reaches
/// `ClusterScriptParameters.settleBytes`, which evicts the oldest runs while the data set is
/// over `history_bytes`. So the cap holds to within that many bytes per node.
extension ClusterEngine {
    /// Counts `bytes` of history this node just kept.
    func addHistoryBytes(_ bytes: Int) {
        unsettledHistoryBytes += bytes
    }

    /// A `state` script's success comes as one string, `REV SEQ INDEX KEPT` (an array reply
    /// costs the script thousands of instructions inside Redis): read here into the array
    /// the broker reads, `{0, rev, seq, index, kept}`. Other replies pass as they are.
    static func stateReply(_ reply: RedisReply) -> RedisReply {
        guard case .string(let bytes) = reply else { return reply }
        let numbers = bytes.split(separator: UInt8(ascii: " ")).compactMap { Int(String(decoding: $0, as: UTF8.self)) }
        guard numbers.count == 4 else { return .error("unexpected reply to a state op") }
        return .array([.integer(0)] + numbers.map { .integer($0) })
    }

    /// A `state` reply's fifth element is the history bytes its event kept.
    func countStateHistory(_ reply: RedisReply) {
        guard let parts = reply.elements, parts.count == 5, parts[0].integer == 0, let bytes = parts[4].integer else { return }
        addHistoryBytes(bytes)
        settleHistoryIfDue()
    }

    /// Calls `settle` once the bytes not yet told reach the step (fire and forget: a failed
    /// call loses the count of those bytes, which history then holds past the cap until they
    /// are trimmed or evicted, and counted off then).
    func settleHistoryIfDue() {
        guard unsettledHistoryBytes >= scriptParameters.settleBytes, let sha = scripts["settle"] else { return }
        let bytes = unsettledHistoryBytes
        unsettledHistoryBytes = 0
        commands.send([Array("EVALSHA".utf8), sha, Array("0".utf8), Array(String(bytes).utf8)]) { [unowned self] reply in
            if let failure = reply.failure, failure.hasPrefix("NOSCRIPT") { loadScripts() }
        }
    }

    /// Loads the data-path scripts again when the limits they hold changed (SIGHUP), and
    /// switches to them once Redis has them all; calls meanwhile use the old ones.
    func reloadScriptsIfChanged() {
        let wanted = ClusterScriptParameters(prefix: prefix, config: server.config)
        guard wanted != scriptParameters, !isReloadingScripts, commands.isConnected else { return }
        isReloadingScripts = true
        let sources = Self.dataPathScripts(wanted)
        var loaded: [String: [UInt8]] = [:]
        for (name, source) in sources {
            commands.send([Array("SCRIPT".utf8), Array("LOAD".utf8), Array(source.utf8)]) { [unowned self] reply in
                if let sha = reply.bytes { loaded[name] = sha }
                guard loaded.count == sources.count || reply.bytes == nil else { return }
                isReloadingScripts = false
                guard loaded.count == sources.count else { return }
                scripts.merge(loaded) { _, new in new }
                scriptParameters = wanted
                server.logger.info("cluster: scripts loaded again with the new limits", ["history": wanted.history])
            }
        }
    }
}
