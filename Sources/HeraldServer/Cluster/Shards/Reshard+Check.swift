/// The check pass: every server walked with `SCAN {p}*`, every channel found where NEW
/// places it and nowhere else, the count compared with the one taken before; then each
/// server's counters written (`ShardCounters`), `{p}shards` set to NEW and `{p}reshard`
/// deleted.
extension Reshard {
    /// What the walk of one server found.
    struct ServerScan {
        /// The counters of its channels that belong there.
        var counters = ShardCounters()
        /// Its `{p}ub:USER` keys.
        var userKeys: [[UInt8]] = []
        /// How many channels it holds that NEW places elsewhere.
        var misplaced = 0
        /// The first few of them, for the message.
        var examples: [String] = []
    }

    /// Checks every server, writes the counters and finishes.
    /// - Returns: the summary.
    /// - Throws: `ReshardError.failed` when a channel is off its server (the next run moves
    ///   it) or the count differs from the one before.
    func checkPass() throws(ReshardError) -> String {
        say("checking every channel's server and recomputing the counters")
        var scans: [ServerScan] = []
        var lastLine = ReshardMeter.now()
        var seen = 0
        for server in plan.servers.indices {
            scans.append(try walk(server) { found in
                seen += found
                let now = ReshardMeter.now()
                if now - lastLine >= ReshardMeter.interval {
                    lastLine = now
                    say("checked \(seen) of \(progress.channels) channels")
                }
            })
        }
        let misplaced = scans.reduce(0) { $0 + $1.misplaced }
        if misplaced > 0 {
            let examples = scans.flatMap(\.examples).prefix(5).joined(separator: ", ")
            progress.phase = .move
            progress.cursors = [:]
            try runAll(0, [[Array("DEL".utf8), plan.key("reshard")], [Array("HSET".utf8), plan.key("reshard")] + progress.fields],
                       doing: "recording the progress")
            throw .failed("\(misplaced) channels are not on their server under NEW (\(examples)); was a node running? "
                + "Run the same command again: it moves them")
        }
        let after = scans.reduce(0) { $0 + $1.counters.channels }
        guard after == progress.channels else {
            throw .failed("the cluster held \(progress.channels) channels before and \(after) now, each on its server; "
                + "nothing is lost by the order of the moves, so something else wrote or deleted channels meanwhile. "
                + "Once that is understood, \"HSET \(plan.prefix)reshard channels \(after)\" on \(plan.servers[0].address) "
                + "and the same command again finish it")
        }
        var warnings: [String] = []
        for (server, scan) in scans.enumerated() {
            warnings += try writeCounters(server, scan)
        }
        try setShardsRecord(plan.new.recorded)
        try runAll(0, [[Array("DEL".utf8), plan.key("reshard")]], doing: "deleting \(plan.prefix)reshard")
        warnings.forEach { say("warning: " + $0) }
        return summary(scans)
    }

    /// Walks every key under the prefix on `server`, reading each channel's counters.
    /// - Parameter found: called with how many channels each page held.
    func walk(_ server: Int, found: (Int) -> Void) throws(ReshardError) -> ServerScan {
        var scan = ServerScan()
        let userStem = plan.key("ub:")
        var cursor = "0"
        repeat {
            let (next, keys) = try self.scan(server, cursor: cursor, match: plan.match(""))
            scan.userKeys += keys.filter { $0.starts(with: userStem) }
            var here: [[UInt8]] = []
            for channel in channels(in: keys) {
                if plan.home(of: channel) == server {
                    here.append(channel)
                } else {
                    scan.misplaced += 1
                    if scan.examples.count < 5 {
                        scan.examples.append("\(String(decoding: channel, as: UTF8.self)) on \(plan.servers[server].address)")
                    }
                }
            }
            let reads = here.flatMap { channel in
                [[Array("HMGET".utf8), plan.key("m:", channel)] + ChannelRecord.fieldNames,
                 [Array("EXISTS".utf8), plan.key("h:", channel)]]
            }
            let replies = try runAll(server, reads, doing: "reading channel hashes")
            for (at, channel) in here.enumerated() {
                guard 2 * at + 1 < replies.count,
                      let record = ChannelRecord(channel: channel, fields: replies[2 * at], hasStream: replies[2 * at + 1].integer == 1) else {
                    throw .failed("Redis at \(plan.servers[server].address): \(plan.prefix)m:"
                        + "\(String(decoding: channel, as: UTF8.self)) is not a channel's hash")
                }
                scan.counters.add(record)
            }
            found(here.count)
            cursor = next
        } while cursor != "0"
        return scan
    }

    /// Writes `scan`'s counters on `server`.
    /// - Returns: warnings: `{p}sk` or `{p}hi` counting other than the channels do.
    func writeCounters(_ server: Int, _ scan: ServerScan) throws(ReshardError) -> [String] {
        try runAll(server, scan.counters.writeCommands(plan, existingUserKeys: scan.userKeys), doing: "writing the counters")
        let cards = try runAll(server, [[Array("ZCARD".utf8), plan.key("sk")], [Array("ZCARD".utf8), plan.key("hi")]],
                               doing: "counting \(plan.prefix)sk and \(plan.prefix)hi")
        var warnings: [String] = []
        let address = plan.servers[server].address
        if let listed = cards[0].integer, listed != scan.counters.retained {
            warnings.append("\(address): \(plan.prefix)sk lists \(listed) channels, \(scan.counters.retained) hold a value or a list")
        }
        if let listed = cards[1].integer, listed != scan.counters.streams {
            warnings.append("\(address): \(plan.prefix)hi lists \(listed) channels, \(scan.counters.streams) have history")
        }
        return warnings
    }

    /// The closing report: channels before and after, moved, time, and per server its
    /// channels and counters.
    func summary(_ scans: [ServerScan]) -> String {
        let seconds = ReshardMeter.now() - startedAt
        var lines = ["reshard done: \(plan.old.recorded) -> \(plan.new.recorded)",
                     "  channels: \(progress.channels) before, \(scans.reduce(0) { $0 + $1.counters.channels }) after; "
                        + "moved \(progress.moved) (\(progress.moved - movedBefore) in this run, "
                        + ReshardMeter.duration(seconds) + ")"]
        for (server, scan) in scans.enumerated() {
            let counters = scan.counters
            lines.append("  \(plan.servers[server].address): \(counters.channels) channels, retained \(counters.retainedBytes) B "
                + "(\(counters.retained) channels, \(counters.userRetainedBytes.count) users), history \(counters.historyBytes) B "
                + "(\(counters.streams) streams, \(counters.userHistoryBytes.count) users)")
        }
        lines.append("  \(plan.prefix)shards = \(plan.new.recorded)")
        return lines.joined(separator: "\n")
    }
}
