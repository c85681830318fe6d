/// One channel on its way from the server that holds it to its server under NEW: its keys
/// as `DUMP` read them on the source, and the commands that put it on the destination and
/// then take it off the source (`Reshard`, "What moves with a channel").
///
/// The commands are built so that running them again changes nothing more: `RESTORE …
/// REPLACE`, `DEL` of a key the source does not have, `ZADD`/`ZREM` of the channel's own
/// member. Only the rank the destination gives it in `{p}hi` and `{p}ui:USER` is new each
/// time (the back of the eviction order, as for a channel that just gained a run).
struct ChannelMove: Equatable, Sendable {
    /// The channel's name.
    let channel: [UInt8]
    /// `DUMP {p}m:CH`.
    let meta: [UInt8]
    /// `DUMP {p}h:CH`; nil when it has no history stream.
    let history: [UInt8]?
    /// `DUMP {p}l:CH`; nil when it holds no list.
    let list: [UInt8]?
    /// Whether its hash holds a value or a list (`k`): it is in `{p}sk`.
    let isRetained: Bool
    /// `hu`, the user charged for its history (nil: none).
    let historyUser: [UInt8]?
    /// Whether `hc` is set too: the channel is ranked in `{p}ui:USER` while its stream exists.
    let isCharged: Bool

    /// How many commands `readCommands` gives per channel.
    static let readCount = 4

    /// What the source is asked for one channel: `DUMP` of its three keys, and the hash
    /// fields the sets depend on.
    static func readCommands(_ plan: ReshardPlan, _ channel: [UInt8]) -> [[[UInt8]]] {
        let dump = Array("DUMP".utf8)
        return [[dump, plan.key("m:", channel)], [dump, plan.key("h:", channel)], [dump, plan.key("l:", channel)],
                [Array("HMGET".utf8), plan.key("m:", channel)] + ["k", "hu", "hc"].map { Array($0.utf8) }]
    }

    /// Reads the replies to `readCommands`.
    /// - Returns: nil when the channel's hash is gone (moved already: `SCAN` may list a key
    ///   twice).
    /// - Throws: `ReshardError.failed` on an error reply or a reply of the wrong shape.
    init?(channel: [UInt8], replies: ArraySlice<RedisReply>, source: RedisAddress) throws(ReshardError) {
        let replies = Array(replies)
        let name = String(decoding: channel, as: UTF8.self)
        guard replies.count == Self.readCount else { throw .failed("Redis at \(source): missing replies for channel \(name)") }
        for reply in replies {
            if let failure = reply.failure { throw .failed("Redis at \(source), reading channel \(name): \(failure)") }
        }
        guard case .string(let meta) = replies[0] else { return nil }
        guard let fields = replies[3].elements, fields.count == 3 else {
            throw .failed("Redis at \(source): HMGET of channel \(name) did not give three fields")
        }
        self.channel = channel
        self.meta = meta
        history = replies[1].bytes
        list = replies[2].bytes
        let kind = fields[0].bytes
        isRetained = kind == [UInt8(ascii: "v")] || kind == [UInt8(ascii: "l")]
        historyUser = fields[1].bytes.flatMap { $0.isEmpty ? nil : $0 }
        isCharged = fields[2].bytes != nil
    }

    /// The channel as given (tests).
    init(channel: [UInt8], meta: [UInt8], history: [UInt8]?, list: [UInt8]?, isRetained: Bool,
         historyUser: [UInt8]?, isCharged: Bool) {
        self.channel = channel
        self.meta = meta
        self.history = history
        self.list = list
        self.isRetained = isRetained
        self.historyUser = historyUser
        self.isCharged = isCharged
    }

    /// On the destination: its keys restored as they were (a key the source lacks
    /// deleted), its `{p}sk` membership as its hash says, and out of `{p}hi` without a
    /// stream (`rankCommand` ranks those with one).
    func restoreCommands(_ plan: ReshardPlan) -> [[[UInt8]]] {
        func restore(_ stem: String, _ payload: [UInt8]?) -> [[UInt8]] {
            guard let payload else { return [Array("DEL".utf8), plan.key(stem, channel)] }
            return [Array("RESTORE".utf8), plan.key(stem, channel), [UInt8(ascii: "0")], payload, Array("REPLACE".utf8)]
        }
        var commands = [restore("m:", meta), restore("h:", history), restore("l:", list)]
        commands.append(isRetained ? [Array("ZADD".utf8), plan.key("sk"), [UInt8(ascii: "0")], channel]
                                   : [Array("ZREM".utf8), plan.key("sk"), channel])
        if history == nil { commands.append([Array("ZREM".utf8), plan.key("hi"), channel]) }
        return commands
    }

    /// On the source, once the destination has it: its keys deleted (one `DEL`), and the
    /// channel out of `{p}sk`, `{p}hi` and its history user's `{p}ui:USER`.
    func removeCommands(_ plan: ReshardPlan) -> [[[UInt8]]] {
        var commands: [[[UInt8]]] = [
            [Array("DEL".utf8), plan.key("m:", channel), plan.key("h:", channel), plan.key("l:", channel)],
            [Array("ZREM".utf8), plan.key("sk"), channel],
            [Array("ZREM".utf8), plan.key("hi"), channel],
        ]
        if let historyUser { commands.append([Array("ZREM".utf8), plan.key("ui:", historyUser), channel]) }
        return commands
    }

    /// On the destination, after the restores: each channel of `moves` that has a stream
    /// is ranked at the back of `{p}hi` (the rank from `{p}hs`, as `keep` gives one), and
    /// of its history user's `{p}ui:USER` when `settle` charged it. Nil when none has a stream.
    static func rankCommand(_ plan: ReshardPlan, _ moves: [ChannelMove]) -> [[UInt8]]? {
        let ranked = moves.filter { $0.history != nil }
        guard !ranked.isEmpty else { return nil }
        var command: [[UInt8]] = [Array("EVAL".utf8), Array(rankScript.utf8), [UInt8(ascii: "0")], Array(plan.prefix.utf8)]
        for move in ranked {
            command.append(move.channel)
            command.append(move.isCharged ? move.historyUser ?? [] : [])
        }
        return command
    }

    /// ARGV = prefix, then `channel user` pairs (user '' for none).
    static let rankScript = """
    local p = ARGV[1]
    for at = 2, #ARGV - 1, 2 do
      local rank = redis.call('INCR', p .. 'hs')
      redis.call('ZADD', p .. 'hi', rank, ARGV[at])
      if ARGV[at + 1] ~= '' then redis.call('ZADD', p .. 'ui:' .. ARGV[at + 1], rank, ARGV[at]) end
    end
    return #ARGV
    """
}
