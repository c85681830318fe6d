/// The move pass: each of OLD's servers walked with `SCAN {p}m:*` from its recorded cursor,
/// the channels it holds that NEW places elsewhere moved in batches (`ChannelMove`).
extension Reshard {
    /// Moves every channel whose server changes, recording the count after each batch and
    /// the cursor after each `SCAN` page (a page cut short is walked again: what it moved is
    /// no longer on the source). A kill between a batch's deletes and its record leaves
    /// `moved` short by that batch; the check pass counts the channels themselves.
    func movePass() throws(ReshardError) {
        var meter = ReshardMeter(now: ReshardMeter.now(), moved: progress.moved)
        for source in 0..<plan.sourceCount {
            let name = plan.servers[source].address.description
            var cursor = progress.cursors[name] ?? "0"
            while cursor != ReshardProgress.done {
                let (next, keys) = try scan(source, cursor: cursor, match: plan.match("m:"))
                let strays = channels(in: keys).filter { plan.home(of: $0) != source }
                for start in stride(from: 0, to: strays.count, by: Self.batchSize) {
                    progress.moved += try move(Array(strays[start..<min(start + Self.batchSize, strays.count)]), from: source)
                    try record([Array("moved".utf8), Array(String(progress.moved).utf8)])
                    if let line = meter.line(now: ReshardMeter.now(), moved: progress.moved, moving: progress.moving,
                                             channels: progress.channels) {
                        say(line)
                    }
                }
                cursor = next == "0" ? ReshardProgress.done : next
                progress.cursors[name] = cursor
                try record(progress.pageFields(server: name))
            }
        }
        say(ReshardMeter.text(moved: progress.moved, moving: progress.moving, channels: progress.channels,
                              rate: meter.rate(now: ReshardMeter.now(), moved: progress.moved)))
    }

    /// Moves `channels` from `source` to their servers: reads them, restores them on each
    /// destination, and deletes them on the source only once every destination has them.
    /// - Returns: how many moved (a channel listed twice by `SCAN` is gone the second time).
    /// - Throws: `ReshardError.failed` when a server fails or refuses a command; nothing
    ///   of the batch is deleted from the source then.
    func move(_ channels: [[UInt8]], from source: Int) throws(ReshardError) -> Int {
        let reads = channels.flatMap { ChannelMove.readCommands(plan, $0) }
        let replies = try pipeline(source, reads)
        let sourceAddress = plan.servers[source].address
        var byDestination: [Int: [ChannelMove]] = [:]
        for (at, channel) in channels.enumerated() {
            let first = at * ChannelMove.readCount
            guard let move = try ChannelMove(channel: channel, replies: replies[first..<min(first + ChannelMove.readCount, replies.count)],
                                             source: sourceAddress) else { continue }
            byDestination[plan.home(of: channel), default: []].append(move)
        }
        for (destination, moves) in byDestination.sorted(by: { $0.key < $1.key }) {
            var commands = moves.flatMap { $0.restoreCommands(plan) }
            if let rank = ChannelMove.rankCommand(plan, moves) { commands.append(rank) }
            try runAll(destination, commands, doing: "restoring channels from \(sourceAddress) (nothing of them was "
                + "deleted there; run again once the cause is fixed)")
        }
        let moves = byDestination.keys.sorted().flatMap { byDestination[$0] ?? [] }
        try runAll(source, moves.flatMap { $0.removeCommands(plan) }, doing: "deleting moved channels")
        return moves.count
    }
}
