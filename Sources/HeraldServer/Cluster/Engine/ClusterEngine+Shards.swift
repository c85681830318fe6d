import CLibUV
import HeraldBroker

/// Several Redis primaries (issue 33; docs/architecture.md, "Several Redis primaries"): the
/// engine's second dimension. Shard 0 is the engine's own links; the others are
/// `DataShard`s. A channel's calls (its publish runs, state ops, catch-ups, `resume`,
/// `settle`, the collection) go to the shard `ShardMap` picks; everything else to shard 0.
/// Each shard's copy of what its scripts read beyond the channel (the queue groups' member
/// counts, the nodes' liveness keys) is written by every node for itself.
extension ClusterEngine {
    /// The scripts a data shard loads: the data path and the channel-wide reads and
    /// clean-ups; the cluster's own records are never touched there.
    static func shardScriptSources(_ parameters: ClusterScriptParameters) -> [(String, String)] {
        dataPathScripts(parameters) + [
            ("catchUp", ClusterStateScripts.catchUp), ("resume", ClusterStateScripts.resume),
            ("collect", ClusterCollectScripts.collect), ("forget", ClusterCollectScripts.forget),
            ("groupLayout", ClusterGroupScripts.groupLayout), ("clearOnShard", ClusterInstanceScripts.clearOnShard),
        ]
    }

    /// The shard `channel` lives on.
    func shard(of channel: [UInt8]) -> Int {
        shardMap.count == 1 ? 0 : shardMap.shard(of: channel)
    }

    /// The command link of `shard`, nil when that shard does not serve now (its calls are
    /// answered `unavailable`). Shard 0's is the engine's own, whose outage is the
    /// cluster's (`send` refuses everything then).
    func dataLink(_ shard: Int) -> RedisLink? {
        guard shard > 0 else { return commands }
        let data = dataShards[shard - 1]
        return data.isReady ? data.commands : nil
    }

    /// Every shard's command link that serves now, with its index.
    var servingLinks: [(shard: Int, link: RedisLink)] {
        [(0, commands)] + dataShards.filter(\.isReady).map { ($0.index, $0.commands) }
    }

    /// Connects every data shard's two links.
    func startShards() {
        for shard in dataShards {
            shard.commands.onConnect = { [unowned self, unowned shard] in
                shard.generation += 1
                shard.loadedScripts = nil
                loadScripts(on: shard)
            }
            shard.commands.onDisconnect = { [unowned self, unowned shard] reason in shardLost(shard, reason) }
            shard.messages.onConnect = { [unowned self, unowned shard] in subscribeNodeChannel(on: shard) }
            shard.messages.onDisconnect = { [unowned self, unowned shard] reason in shardLost(shard, reason) }
            shard.commands.start()
            shard.messages.start()
        }
    }

    /// Subscribes this node's channel on `shard` (at connect, and under a new index).
    func subscribeNodeChannel(on shard: DataShard) {
        shard.isSubscribed = false
        let channel = ownChannel
        shard.messages.subscribe([channel]) { [unowned self, unowned shard] reply in
            guard let parts = reply.elements, parts.count == 3, let kind = parts[0].bytes else { return }
            if kind == Array("subscribe".utf8) {
                shard.isSubscribed = parts[1].bytes == ownChannel
                holdEvents(of: shard)
                return shardMayServe(shard)
            }
            guard kind == Array("message".utf8), parts[1].bytes == ownChannel, let payload = parts[2].bytes else { return }
            if payload.first == Self.fenceMark { return fenceReturned(payload, from: shard.index) }
            deliver(payload)
        }
    }

    /// Loads the shard's scripts (at connect, after `NOSCRIPT`, after new limits).
    func loadScripts(on shard: DataShard) {
        let generation = shard.generation
        guard shard.loadingGeneration != generation else { return }
        shard.loadingGeneration = generation
        let sources = Self.shardScriptSources(scriptParameters)
        var loaded: [String: [UInt8]] = [:]
        var failed = false
        for (name, source) in sources {
            shard.commands.send([Array("SCRIPT".utf8), Array("LOAD".utf8), Array(source.utf8)]) { [unowned self, unowned shard] reply in
                guard shard.generation == generation, !failed else { return }
                guard let sha = reply.bytes else {
                    failed = true
                    shard.loadingGeneration = nil
                    server.logger.warn("cluster: loading the scripts on a shard failed; trying again",
                                       ["shard": shard.index, "error": reply.failure ?? "bad reply"])
                    return
                }
                loaded[name] = sha
                guard loaded.count == sources.count else { return }
                shard.loadingGeneration = nil
                shard.loadedScripts = loaded
                shardMayServe(shard)
            }
        }
        shard.commands.flush()
    }

    /// A shard whose links, scripts and subscription are all in place starts serving: this
    /// node's queue-group members and liveness are copied there, and, back after an outage,
    /// its channels' counters are resumed (`resumeSeqs`).
    private func shardMayServe(_ shard: DataShard, resumes: Bool = true) {
        if let run = awaitingShards, shard.isReady { return scriptsLoaded(run: run) }
        guard shard.isReady, isReady else { return }
        copyGroupLayouts(to: shard)
        copyLiveness(to: shard)
        if shard.wasReady && resumes {
            server.logger.info("cluster: a Redis shard is back", ["shard": shard.index, "redis": shard.address])
            let index = shard.index
            resumeSeqs(points: shard.pendingResume) { [unowned self] channel in self.shard(of: channel) == index }
            shard.pendingResume = nil
        } else {
            // Shard 0 came back too: `registerAgain` resumes every channel.
            shard.pendingResume = nil
            server.logger.info("cluster: Redis shard ready", ["shard": shard.index, "redis": shard.address])
        }
        shard.wasReady = true
        shard.commands.flush()
    }

    /// The node channel is subscribed again on a shard that served before: its channels'
    /// live events are held from now until their `resume` (`DataShard.pendingResume`).
    private func holdEvents(of shard: DataShard) {
        guard shard.isSubscribed, shard.wasReady, shard.pendingResume == nil, isReady else { return }
        let index = shard.index
        shard.pendingResume = server.shared.withLock { broker in
            broker.beginResume { [unowned self] channel in self.shard(of: channel) == index }
        }
    }

    /// Shard 0 became ready: the shards already connected start serving too (their
    /// channels are resumed with shard 0's, when it comes back: `registerAgain`).
    func shardsMayServe() {
        for shard in dataShards { shardMayServe(shard, resumes: false) }
    }

    /// A link of `shard` dropped: its channels are `unavailable` until it is back (the
    /// calls in flight on it are answered so by the link).
    private func shardLost(_ shard: DataShard, _ reason: String) {
        let wasServing = shard.loadedScripts != nil && shard.isSubscribed
        if !shard.commands.isConnected { shard.loadedScripts = nil }
        if !shard.messages.isConnected { shard.isSubscribed = false }
        fenceShardLost(shard.index)
        guard wasServing else { return }
        server.logger.warn("cluster: Redis shard connection lost; its channels are unavailable until it is back",
                           ["shard": shard.index, "redis": shard.address, "error": reason])
    }

    /// A shard answered `NOSCRIPT` (it restarted empty, or its scripts were flushed): shard
    /// 0 starts over as today; another shard loads its scripts again.
    func scriptsMissing(onShard index: Int) {
        guard index > 0 else { return loadScripts() }
        let shard = dataShards[index - 1]
        shard.loadedScripts = nil
        loadScripts(on: shard)
    }

    /// Every shard's liveness copy, from the period timer (the group routing of a shard's
    /// scripts leaves out nodes whose key is gone, as shard 0's does).
    func refreshShardLiveness() {
        guard !incarnation.isResetting else { return }
        for shard in dataShards where shard.isReady { copyLiveness(to: shard) }
    }

    private func copyLiveness(to shard: DataShard) {
        shard.commands.send([Array("SET".utf8), Array((prefix + "alive:" + String(nodeIndex)).utf8), Array("1".utf8),
                             Array("PX".utf8), Array(String(settings.nodeTimeoutMs).utf8)]) { _ in }
    }

    /// This node's queue-group member counts, written on `shard` (it may have come back
    /// empty).
    private func copyGroupLayouts(to shard: DataShard) {
        let groups = server.shared.withLock { broker in broker.localGroupMemberships() }
        for group in groups {
            sendGroupLayout(op: "+", pattern: group.pattern, group: group.group, members: group.members, on: shard)
        }
    }

    /// A queue-group membership change of this node, copied to every serving data shard.
    /// - Returns: how many copies went out; `done` is called once per copy answered.
    func copyGroupChange(_ change: ClusterState.InterestChange, op: String,
                         done: @escaping (RedisReply) -> Void = { _ in }) -> Int {
        guard let group = change.group else { return 0 }
        var sent = 0
        for shard in dataShards where shard.isReady {
            if sendGroupLayout(op: op, pattern: change.pattern, group: group, members: change.members, on: shard, done: done) {
                sent += 1
            }
        }
        return sent
    }

    @discardableResult
    private func sendGroupLayout(op: String, pattern: [UInt8], group: [UInt8], members: Int, on shard: DataShard,
                                 done: @escaping (RedisReply) -> Void = { _ in }) -> Bool {
        guard let sha = scripts["groupLayout"] else { return false }
        return shard.commands.send([Array("EVALSHA".utf8), sha, Array("0".utf8), Array(prefix.utf8),
                                    Array(String(nodeIndex).utf8), Array(op.utf8), pattern, group,
                                    Array(String(members).utf8)], done)
    }

    /// Clears removed instance channels that live on data shards (`InstanceOwnerMirror`).
    func clearOnShards(_ names: [[UInt8]]) {
        guard let sha = scripts["clearOnShard"] else { return }
        var byShard: [Int: [[UInt8]]] = [:]
        for name in names where shard(of: name) > 0 { byShard[shard(of: name), default: []].append(name) }
        for (shard, list) in byShard {
            dataLink(shard)?.send([Array("EVALSHA".utf8), sha, Array("0".utf8), Array(prefix.utf8)] + list) { _ in }
        }
        flushShards()
    }

    /// Cuts every data shard's links (this node joined again under a new index: its node
    /// channel and liveness key change).
    func cutShards(_ reason: String) {
        for shard in dataShards {
            shard.commands.cut(reason)
            shard.messages.cut(reason)
        }
    }

    /// Flushes every data shard's command link (end of a loop pass or period).
    func flushShards() {
        for shard in dataShards { shard.commands.flush() }
    }
}
