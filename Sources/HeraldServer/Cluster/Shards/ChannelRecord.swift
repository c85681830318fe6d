/// What a channel's hash `{p}m:CH` says about the counters it is charged to, read by the
/// reshard's check pass: the fields `ClusterInstanceScripts.clear` reads to take a channel
/// off every counter, so summing these over a server's channels gives what the scripts'
/// counters hold when nothing drifted.
struct ChannelRecord: Equatable, Sendable {
    /// The channel's name.
    let channel: [UInt8]
    /// `k`: `v` value, `l` list, `t` tombstone, nil none.
    let kind: [UInt8]?
    /// `c`: the content's bytes.
    let content: Int
    /// `u`: the user charged for the retained state (nil or empty: none).
    let holder: [UInt8]?
    /// `cb`: history bytes ever kept.
    let kept: Int
    /// `tb`: the part of `cb` trimmed or evicted.
    let dropped: Int
    /// `hc`: `cb` when the history user was last charged (nil: never charged).
    let charged: Int?
    /// `hu`: the user charged for the history.
    let historyUser: [UInt8]?
    /// Whether `{p}h:CH` exists.
    let hasStream: Bool

    /// The hash fields to ask for, in the order `init(channel:fields:hasStream:)` reads them.
    static let fieldNames: [[UInt8]] = ["k", "c", "u", "cb", "tb", "hc", "hu"].map { Array($0.utf8) }

    /// Reads the reply of `HMGET {p}m:CH` + `fieldNames`; nil when it is not an array of
    /// that many (the key is not a hash).
    init?(channel: [UInt8], fields reply: RedisReply, hasStream: Bool) {
        guard let values = reply.elements, values.count == Self.fieldNames.count else { return nil }
        func number(_ at: Int) -> Int? { values[at].bytes.flatMap { Int(String(decoding: $0, as: UTF8.self)) } }
        self.channel = channel
        kind = values[0].bytes
        content = number(1) ?? 0
        holder = values[2].bytes
        kept = number(3) ?? 0
        dropped = number(4) ?? 0
        charged = number(5)
        historyUser = values[6].bytes
        self.hasStream = hasStream
    }

    /// Whether it holds a value or a list (it is in `{p}sk`, and charged to `{p}rb`).
    var isRetained: Bool { kind == [UInt8(ascii: "v")] || kind == [UInt8(ascii: "l")] }

    /// What it adds to `{p}rb` and to its holder's `{p}ub:USER`: the name's bytes and the
    /// content's, as the state script counts (`#ch + c`).
    var retainedBytes: Int { isRetained ? channel.count + content : 0 }

    /// What it adds to `{p}hb`: the history it holds (`cb - tb`) and, while its stream
    /// exists, the stream's own overhead (`ClusterHistoryScripts.streamOverheadBytes`).
    var historyBytes: Int {
        max(0, kept - dropped + (hasStream ? ClusterHistoryScripts.streamOverheadBytes : 0))
    }

    /// What its history user is charged in `{p}uh`: `hc - tb` and the overhead, once
    /// `settle` charged it (nil: nobody is).
    var userHistoryBytes: Int? {
        guard let charged, let historyUser, !historyUser.isEmpty else { return nil }
        return charged - dropped + ClusterHistoryScripts.streamOverheadBytes
    }
}
