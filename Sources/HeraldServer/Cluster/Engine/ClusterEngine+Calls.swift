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
            ("leaseResync", ClusterLeaseScripts.resync),
            ("collect", ClusterCollectScripts.collect), ("forget", ClusterCollectScripts.forget),
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
        if let wait = replicaWait(for: call) {
            let slot = wait.add(call)
            let sent = commands.send(arguments) { reply in wait.replied(slot, reply) }
            if !sent { wait.replied(slot, .disconnected) }
            return
        }
        let sent = commands.send(arguments) { [unowned self] reply in answered(call, reply) }
        if !sent { answered(call, .disconnected) }
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
