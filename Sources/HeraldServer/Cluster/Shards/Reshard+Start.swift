/// The start of a reshard: what is recorded on shard 0 decides between resuming, starting,
/// refusing and having nothing to do; a fresh start counts the channels first.
extension Reshard {
    /// Resumes the run `{p}reshard` records, or starts one.
    /// - Returns: false when there is nothing to do (`{p}shards` already records NEW).
    /// - Throws: `ReshardError.refused` for another unfinished reshard, a node still
    ///   running, `{p}shards` naming neither list, or a NEW-only server holding channels.
    func start() throws(ReshardError) -> Bool {
        let key = plan.key("reshard")
        let reply = try runAll(0, [[Array("HGETALL".utf8), key]], doing: "reading \(plan.prefix)reshard")[0]
        if let found = try ReshardProgress(hash: reply, key: plan.prefix + "reshard") {
            guard found.old == plan.old.recorded, found.new == plan.new.recorded else {
                throw .refused("a reshard from \(found.old) to \(found.new) is unfinished (\(plan.prefix)reshard on "
                    + "\(plan.servers[0].address)); finish it first by running it again: "
                    + "heraldd --reshard \(found.old) \(found.new) (with the same credentials)")
            }
            try refuseRunningNodes()
            progress = found
            say("resuming: \(found.moved) of \(found.moving) channels moved (\(found.channels) in all), phase \(found.phase.rawValue)")
            try setShardsRecord(plan.marker)
            return true
        }
        try refuseRunningNodes()
        let shards = try runAll(0, [[Array("GET".utf8), plan.key("shards")]], doing: "reading \(plan.prefix)shards")[0]
        if let recorded = shards.bytes.map({ String(decoding: $0, as: UTF8.self) }), recorded != plan.old.recorded {
            if recorded == plan.new.recorded {
                say("\(plan.prefix)shards on \(plan.servers[0].address) already records NEW (\(recorded)): nothing to do")
                return false
            }
            throw .refused("\(plan.prefix)shards on \(plan.servers[0].address) records \"\(recorded)\", "
                + "which is not OLD (\(plan.old.recorded)): give the list the cluster ran with")
        }
        progress = try count()
        say("\(progress.channels) channels, \(progress.moving) to move from \(plan.old.recorded) to \(plan.new.recorded)")
        try runAll(0, [[Array("DEL".utf8), key], [Array("HSET".utf8), key] + progress.fields],
                   doing: "recording the progress")
        try setShardsRecord(plan.marker)
        return true
    }

    /// Refuses while any registered node's liveness key is set: moving channels under a
    /// running node would lose its writes.
    func refuseRunningNodes() throws(ReshardError) {
        let nodes = try runAll(0, [[Array("HGETALL".utf8), plan.key("nodes")]], doing: "reading \(plan.prefix)nodes")[0]
        let entries = nodes.elements ?? []
        var pairs: [(index: [UInt8], name: [UInt8])] = []
        var at = 0
        while at + 1 < entries.count {
            if let index = entries[at].bytes, let name = entries[at + 1].bytes { pairs.append((index, name)) }
            at += 2
        }
        guard !pairs.isEmpty else { return }
        let alive = try runAll(0, pairs.map { [Array("EXISTS".utf8), plan.key("alive:") + $0.index] },
                               doing: "reading the nodes' liveness")
        for (pair, reply) in zip(pairs, alive) where reply.integer == 1 {
            let index = String(decoding: pair.index, as: UTF8.self)
            throw .refused("node \(String(decoding: pair.name, as: UTF8.self)) (index \(index)) is running: "
                + "\(plan.prefix)alive:\(index) is set on \(plan.servers[0].address); stop every node first "
                + "(a node killed rather than stopped keeps that key for node_timeout_ms)")
        }
    }

    /// Sets `{p}shards` on shard 0.
    func setShardsRecord(_ value: String) throws(ReshardError) {
        try runAll(0, [[Array("SET".utf8), plan.key("shards"), Array(value.utf8)]], doing: "setting \(plan.prefix)shards")
    }

    /// The counting pass: every channel on OLD's servers, and those whose server changes;
    /// a server only NEW names must hold none.
    func count() throws(ReshardError) -> ReshardProgress {
        var channels = 0
        var moving = 0
        var lastLine = ReshardMeter.now()
        // The servers only NEW names first: one holding channels stops the run before the long part.
        let order = plan.servers.indices.filter(plan.isNewOnly) + plan.servers.indices.filter { !plan.isNewOnly($0) }
        for server in order {
            var cursor = "0"
            var here = 0
            repeat {
                let (next, keys) = try scan(server, cursor: cursor, match: plan.match("m:"))
                for channel in self.channels(in: keys) {
                    here += 1
                    if plan.home(of: channel) != server { moving += 1 }
                }
                cursor = next
                let now = ReshardMeter.now()
                if now - lastLine >= ReshardMeter.interval {
                    lastLine = now
                    say("counting: \(channels + here) channels so far (\(plan.servers[server].address))")
                }
            } while cursor != "0"
            if plan.isNewOnly(server), here > 0 {
                throw .refused("\(plan.servers[server].address) is only in NEW but holds \(here) channels under the prefix "
                    + "\"\(plan.prefix)\": a new shard must hold no data of this cluster (another cluster's prefix, or "
                    + "an empty server)")
            }
            channels += here
        }
        return ReshardProgress(old: plan.old.recorded, new: plan.new.recorded, channels: channels, moving: moving)
    }
}
