import HeraldBroker

/// The script calls parked requests wait for (state ops, `sub` catch-ups): one `EVALSHA`
/// each, on the command link in the order the broker queued them among the events, and the
/// answer handed back to the broker, after which the parked connection reads on.
extension ClusterEngine {
    /// Every script the engine loads, by the name `scripts` keeps its SHA under; the
    /// data-path ones (`publish`, `state`, `settle`) are built with `parameters`.
    static func scriptSources(_ parameters: ClusterScriptParameters) -> [(String, String)] {
        dataPathScripts(parameters) + [
            ("interest", ClusterScripts.interest),
            ("snapshot", ClusterScripts.snapshot),
            ("catchUp", ClusterStateScripts.catchUp), ("groupInterest", ClusterGroupScripts.groupInterest),
            ("reap", ClusterNodeScripts.reap), ("rejoin", ClusterNodeScripts.rejoin),
            ("locks", ClusterLockScripts.locks), ("lockSnapshot", ClusterLockScripts.snapshot),
            ("declare", ClusterInstanceScripts.declare), ("undeclare", ClusterInstanceScripts.undeclare),
            ("reapInstances", ClusterInstanceScripts.reapInstances),
            ("link", ClusterLinkScripts.link), ("unlink", ClusterLinkScripts.unlink),
            ("linkSnapshot", ClusterLinkScripts.snapshot), ("lockResync", ClusterLockScripts.resync),
            ("linkResync", ClusterLinkScripts.resync), ("handlers", ClusterHandlerScripts.handlers),
            ("handlerSnapshot", ClusterHandlerScripts.snapshot), ("handlerResync", ClusterHandlerScripts.resync),
            ("resume", ClusterStateScripts.resume), ("instanceResync", ClusterInstanceScripts.resync),
            ("lease", ClusterLeaseScripts.lease), ("unlease", ClusterLeaseScripts.unlease),
            ("leaseResync", ClusterLeaseScripts.resync), ("rateShare", ClusterRateScripts.share),
            ("presenceRecord", ClusterPresenceScripts.record), ("presenceTake", ClusterPresenceScripts.take),
            ("collect", ClusterCollectScripts.collect), ("forget", ClusterCollectScripts.forget),
            ("groupLayout", ClusterGroupScripts.groupLayout), ("clearOnShard", ClusterInstanceScripts.clearOnShard),
        ]
    }

    /// The scripts built with the prefix and limits as constants.
    static func dataPathScripts(_ parameters: ClusterScriptParameters) -> [(String, String)] {
        [("publish", ClusterScripts.publish(parameters)), ("publishOne", ClusterScripts.publishOne(parameters)),
         ("state", ClusterStateScripts.state(parameters)),
         ("settle", ClusterHistoryScripts.settle(parameters))]
    }

    /// Sends one call, or keeps it until its interest ticket was released.
    func sendCall(_ call: ClusterState.ScriptCall) {
        if call.afterTicket > releasedTicket {
            deferredCalls.append(call)
            return
        }
        if call.script == .locksQuery { return gatherLocks(call) }
        if call.script == .rateShare { return shareRates(call) }
        if call.script == .answer {
            // An answer made at once, in its turn behind pipelined state ops: the reply to a
            // PING on the same link comes after theirs.
            let sent = commands.send([Array("PING".utf8)]) { [unowned self] reply in deliver(call, reply) }
            if !sent { deliver(call, .disconnected) }
            return
        }
        var arguments: [[UInt8]] = [Array("EVALSHA".utf8), scripts[call.script.rawValue] ?? [], Array("0".utf8)]
        if call.script == .state {
            // The prefix is in the script; a state change picks one member of each matching
            // queue group, as a `pub` does.
            let nodes = call.channel.map { table.nodes(for: $0) } ?? []
            let groups = call.channel.map { table.groups(for: $0) } ?? []
            arguments.append(ClusterRecord.encodeTargets(nodes, groups: groups, kept: true))
        } else {
            let targets = call.channel.map { table.nodes(for: $0).map(String.init).joined(separator: ",") } ?? ""
            arguments += [Array(prefix.utf8), Array(targets.utf8)]
        }
        arguments += call.arguments
        if call.script == .catchUp, shardMap.count > 1, call.arguments.count > 1, call.arguments[1] == Array("1".utf8) {
            return gatherCatchUp(call, arguments)
        }
        let shard = self.shard(for: call)
        if shardMap.count > 1, call.script == .state { shareUserLimit(&arguments) }
        guard let link = dataLink(shard) else { return answered(call, .disconnected) }
        if let wait = replicaWait(for: call, shard: shard) {
            let slot = wait.add(call)
            let sent = link.send(arguments) { reply in wait.replied(slot, reply) }
            if !sent { wait.replied(slot, .disconnected) }
            return
        }
        let sent = link.send(arguments) { [unowned self] reply in
            if case .error(let text) = reply, text.hasPrefix("NOSCRIPT") { scriptsMissing(onShard: shard) }
            answered(call, reply)
        }
        if !sent { answered(call, .disconnected) }
    }

    /// The shard a call runs on: a state op's or a catch-up's channel's; every other
    /// script is about the cluster's own records, on shard 0.
    private func shard(for call: ClusterState.ScriptCall) -> Int {
        switch call.script {
        // ARGV: op, channel, … (a `get` has no targets, so no `call.channel`).
        case .state: return call.arguments.count > 1 ? shard(of: call.arguments[1]) : 0
        case .catchUp: return call.arguments.first.map { shard(of: $0) } ?? 0
        default: return 0
        }
    }

    /// A state op's `LIMIT USER` argument (ARGV 7) with the user's `retained_bytes` cut to
    /// one shard's share, as `max_retained_bytes` is (`ClusterScriptParameters.share`).
    private func shareUserLimit(_ arguments: inout [[UInt8]]) {
        let at = 3 + 6
        guard arguments.count > at, let space = arguments[at].firstIndex(of: 32),
              let limit = Int(String(decoding: arguments[at][..<space], as: UTF8.self)) else { return }
        let share = ClusterScriptParameters.share(limit, of: shardMap.count)
        arguments[at] = Array(String(share).utf8) + arguments[at][space...]
    }

    /// A catch-up of a wildcard pattern over several shards: the same call on every shard,
    /// the `current` values merged by channel name (each shard lists its own in order), the
    /// `ok` once every shard answered. A shard that cannot answer makes the whole catch-up
    /// `unavailable` (its values would be missing without a word).
    private func gatherCatchUp(_ call: ClusterState.ScriptCall, _ arguments: [[UInt8]]) {
        var replies: [RedisReply?] = Array(repeating: nil, count: shardMap.count)
        var left = shardMap.count
        for shard in 0..<shardMap.count {
            let take: (RedisReply) -> Void = { [unowned self] reply in
                replies[shard] = reply
                left -= 1
                guard left == 0 else { return }
                answered(call, Self.mergedCatchUp(replies.map { $0 ?? .disconnected }))
            }
            guard let link = dataLink(shard), link.send(arguments, take) else {
                take(.disconnected)
                continue
            }
        }
    }

    /// The replies of one wildcard catch-up from every shard as one: `{seq, first, currents,
    /// history}` with the currents of all, sorted by channel; the first failure otherwise.
    static func mergedCatchUp(_ replies: [RedisReply]) -> RedisReply {
        var currents: [RedisReply] = []
        for reply in replies {
            guard let parts = reply.elements, parts.count == 4 else { return reply.failure == nil ? .error("unexpected catch-up reply") : reply }
            currents += parts[2].elements ?? []
        }
        currents.sort { ($0.elements?.first?.bytes ?? []).lexicographicallyPrecedes($1.elements?.first?.bytes ?? []) }
        guard let first = replies.first?.elements else { return .disconnected }
        return .array([first[0], first[1], .array(currents), first[3]])
    }

    /// Sends the deferred calls whose ticket is now released, in order.
    func sendDeferredCalls() {
        guard deferredCalls.contains(where: { $0.afterTicket <= releasedTicket }) else { return }
        let ready = deferredCalls.filter { $0.afterTicket <= releasedTicket }
        deferredCalls.removeAll { $0.afterTicket <= releasedTicket }
        for call in ready { sendCall(call) }
        waitForReplicas()
    }

    /// A call's reply came (or the call failed): a `link`/`unlink` that changed Redis waits
    /// for every node to apply it; everything else goes to the broker at once.
    func answered(_ call: ClusterState.ScriptCall, _ reply: RedisReply) {
        if case .error(let text) = reply, text.hasPrefix("NOSCRIPT") {
            server.logger.warn("cluster: script missing in Redis; answered unavailable", ["script": call.script.rawValue])
        }
        if call.script == .undeclare, reply.failure != nil { return undeclareFailed(call) }
        if call.script == .link || call.script == .unlink, call.token != 0,
           let version = reply.elements?.dropFirst().first?.integer, reply.elements?.first?.integer == 0 {
            return holdUntilApplied(call, reply, version: version)
        }
        deliver(call, reply)
    }

    /// Hands a call's reply to the broker and lets the parked connection read on.
    func deliver(_ call: ClusterState.ScriptCall, _ answer: RedisReply) {
        var reply = answer
        if call.script == .state {
            reply = Self.stateReply(answer)
            countStateHistory(reply, channel: call.channel)
        }
        let result = call.script == .catchUp ? Self.catchUpValue(reply) : Self.value(reply)
        let session = server.shared.withLock { broker in broker.clusterCallAnswered(token: call.token, result: result) }
        if let session { server.resumeHeldLines(of: session.id) }
    }

    /// A reply as the broker reads it.
    static func value(_ reply: RedisReply) -> ClusterValue {
        switch reply {
        case .string(let bytes): return .bytes(bytes)
        case .status(let text): return .bytes(Array(text.utf8))
        case .integer(let value): return .int(value)
        case .array(let items): return .array(items.map(value))
        case .null: return .null
        case .error, .disconnected: return .failure(reply.failure ?? "error")
        }
    }

    /// The catch-up reply with its history records decoded (`Broker.catchUpEntry`).
    static func catchUpValue(_ reply: RedisReply) -> ClusterValue {
        guard var parts = reply.elements, parts.count == 4 else { return value(reply) }
        let history = (parts[3].elements ?? []).flatMap { entry -> [ClusterValue] in
            guard let bytes = entry.bytes, let records = ClusterRecord.decode(bytes) else { return [] }
            return records.map { Broker.catchUpEntry($0.event) }
        }
        parts[3] = .null
        var converted = parts.map(value)
        converted[3] = .array(history)
        return .array(converted)
    }
}
