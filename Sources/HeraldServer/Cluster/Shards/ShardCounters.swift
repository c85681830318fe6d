/// One server's aggregate counters recomputed from its channels' hashes, and the commands
/// that write them: what `heraldd --reshard` does at the end instead of adding and
/// subtracting as channels move (`Reshard`, "Counters").
///
/// `{p}rb` (retained bytes), `{p}ub:USER` (a user's retained bytes), `{p}hb` (history bytes
/// with each stream's overhead) and `{p}uh` (user → history bytes) are sums over the
/// server's channels (`ChannelRecord`); `{p}sk` and `{p}hi` are checked against how many
/// channels hold content and history (`retained`, `streams`).
struct ShardCounters: Equatable, Sendable {
    /// Channels on the server.
    var channels = 0
    /// `{p}rb`.
    var retainedBytes = 0
    /// `{p}ub:USER`, per user.
    var userRetainedBytes: [[UInt8]: Int] = [:]
    /// `{p}hb`.
    var historyBytes = 0
    /// `{p}uh`, per user.
    var userHistoryBytes: [[UInt8]: Int] = [:]
    /// Channels holding a value or a list: what `{p}sk` should count.
    var retained = 0
    /// Channels with a history stream: what `{p}hi` should count.
    var streams = 0

    /// Counts one channel in.
    mutating func add(_ record: ChannelRecord) {
        channels += 1
        if record.isRetained {
            retained += 1
            retainedBytes += record.retainedBytes
            if let holder = record.holder, !holder.isEmpty {
                userRetainedBytes[holder, default: 0] += record.retainedBytes
            }
        }
        if record.hasStream { streams += 1 }
        historyBytes += record.historyBytes
        if let bytes = record.userHistoryBytes, let user = record.historyUser {
            userHistoryBytes[user, default: 0] += bytes
        }
    }

    /// The commands that make the server's counters these: `rb` and `hb` set (deleted at
    /// 0), `uh` rewritten, every `ub:USER` key found (`existingUserKeys`) that no channel
    /// charges deleted and the others set. Zero counts are left out (the scripts read a
    /// missing counter as 0).
    /// - Parameters:
    ///   - plan: for the key names.
    ///   - existingUserKeys: the `{p}ub:…` keys the server holds now.
    func writeCommands(_ plan: ReshardPlan, existingUserKeys: [[UInt8]]) -> [[[UInt8]]] {
        var commands: [[[UInt8]]] = []
        func setOrDelete(_ key: [UInt8], _ value: Int) {
            commands.append(value == 0 ? [Array("DEL".utf8), key] : [Array("SET".utf8), key, Array(String(value).utf8)])
        }
        setOrDelete(plan.key("rb"), retainedBytes)
        setOrDelete(plan.key("hb"), historyBytes)
        commands.append([Array("DEL".utf8), plan.key("uh")])
        let history = userHistoryBytes.filter { $0.value != 0 }.sorted { $0.key.lexicographicallyPrecedes($1.key) }
        for start in stride(from: 0, to: history.count, by: Self.batch) {
            let pairs = history[start..<min(start + Self.batch, history.count)]
            commands.append([Array("HSET".utf8), plan.key("uh")] + pairs.flatMap { [$0.key, Array(String($0.value).utf8)] })
        }
        let kept = Set(userRetainedBytes.filter { $0.value != 0 }.keys.map { plan.key("ub:", $0) })
        let stale = existingUserKeys.filter { !kept.contains($0) }
        for start in stride(from: 0, to: stale.count, by: Self.batch) {
            commands.append([Array("DEL".utf8)] + stale[start..<min(start + Self.batch, stale.count)])
        }
        for (user, bytes) in userRetainedBytes.sorted(by: { $0.key.lexicographicallyPrecedes($1.key) }) where bytes != 0 {
            setOrDelete(plan.key("ub:", user), bytes)
        }
        return commands
    }

    /// How many fields or keys one command carries.
    static let batch = 512
}
