import HeraldBroker

/// The node's share of the history byte count (`ClusterHistoryScripts`): the scripts keep
/// runs without counting their bytes in Redis (a counter per call is a sixth of a publish's
/// cost there); the node adds up what it kept and calls `settle` each time that reaches
/// `ClusterScriptParameters.settleBytes`, which evicts the oldest runs while the data set is
/// over `history_bytes`. So the cap holds to within that many bytes per node.
extension ClusterEngine {
    /// Channels one `settle` call lists at most: with every one new to history, the users
    /// it charges pass their limits by at most this many streams' overhead, which the call
    /// then evicts (bounded work inside Redis per call).
    static let settleChannelsMax = 256

    /// Counts `bytes` of history this node just kept on `channel` (on its shard); with
    /// `user` (auth on), lists the channel for that user's charge at the next `settle`.
    func addHistoryBytes(_ bytes: Int, channel: [UInt8], user: String?) {
        let shard = self.shard(of: channel)
        unsettledHistoryBytes[shard] += bytes
        if let user, unsettledHistoryChannels[shard][channel] == nil { unsettledHistoryChannels[shard][channel] = user }
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
    /// (State events are charged to the channel's user once one published on it: the call
    /// does not carry the writer's name; what a user writes is bounded by `retained_bytes`.)
    func countStateHistory(_ reply: RedisReply, channel: [UInt8]?) {
        guard let parts = reply.elements, parts.count == 5, parts[0].integer == 0, let bytes = parts[4].integer,
              bytes > 0, let channel else { return }
        addHistoryBytes(bytes, channel: channel, user: nil)
        settleHistoryIfDue()
    }

    /// Calls `settle` once the bytes not yet told reach the step, or the channels listed
    /// reach `settleChannelsMax`, or (`force`, once a period) anything is untold (fire and
    /// forget: a failed call loses the count of those bytes, which history then holds past
    /// the cap until they are trimmed or evicted, and counted off then; its channels are
    /// charged at their next settle).
    func settleHistoryIfDue(force: Bool = false) {
        for shard in 0..<shardMap.count { settleHistoryIfDue(shard: shard, force: force) }
    }

    /// `settleHistoryIfDue` for one shard: each shard counts (and evicts within) its share.
    private func settleHistoryIfDue(shard: Int, force: Bool) {
        let bytes = unsettledHistoryBytes[shard]
        let channels = unsettledHistoryChannels[shard]
        let due = bytes >= scriptParameters.settleBytes
            || channels.count >= Self.settleChannelsMax
            || (force && (bytes > 0 || !channels.isEmpty))
        guard due, let sha = scripts["settle"], let link = dataLink(shard) else { return }
        unsettledHistoryBytes[shard] = 0
        unsettledHistoryChannels[shard] = [:]
        var byUser: [String: [[UInt8]]] = [:]
        for (channel, user) in channels { byUser[user, default: []].append(channel) }
        var arguments: [[UInt8]] = [Array("EVALSHA".utf8), sha, Array("0".utf8), Array(String(bytes).utf8)]
        arguments.reserveCapacity(arguments.count + 3 * byUser.count + channels.count)
        for (user, list) in byUser {
            let limit = ClusterScriptParameters.share(historyLimit(of: user), of: shardMap.count)
            arguments += [Array(user.utf8), Array(String(limit).utf8), Array(String(list.count).utf8)]
            arguments += list
        }
        link.send(arguments) { [unowned self] reply in
            if let failure = reply.failure, failure.hasPrefix("NOSCRIPT") { scriptsMissing(onShard: shard) }
        }
    }

    /// The configured `user_limits.history_bytes` of `user` (0: not a configured user,
    /// nothing is evicted for it).
    private func historyLimit(of user: String) -> Int {
        server.config.authUsers.first { $0.name == user }?.limits.historyBytes ?? 0
    }

    /// Loads the data-path scripts again when the limits they hold changed (SIGHUP), and
    /// switches to them once Redis has them all; calls meanwhile use the old ones.
    func reloadScriptsIfChanged() {
        let wanted = ClusterScriptParameters(prefix: prefix, config: server.config, shards: shardMap.count)
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
                for shard in dataShards where shard.loadedScripts != nil { loadScripts(on: shard) }
                server.logger.info("cluster: scripts loaded again with the new limits", ["history": wanted.history])
            }
        }
    }
}
