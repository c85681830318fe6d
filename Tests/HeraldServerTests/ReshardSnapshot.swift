import Foundation
import Testing
@testable import HeraldServer

/// What the reshard tests compare: every channel's whole state as Redis holds it (its hash,
/// its list, its stream's entries and ids, its memberships in the server's sets), and each
/// server's counters beside the sums of its channels.
struct ChannelSnapshot: Equatable {
    /// `HGETALL {p}m:CH`, as sorted field/value pairs.
    var hash: [[UInt8]]
    /// `LRANGE {p}l:CH 0 -1`.
    var list: RedisReply
    /// `XRANGE {p}h:CH - +`: ids and fields.
    var stream: RedisReply
    /// The stream's `last-generated-id` and `entries-added` (`XINFO STREAM`), nil without one:
    /// what the next `XADD` is checked against.
    var streamState: [RedisReply]?
    /// Whether it is in `{p}sk`, `{p}hi`, and its history user's `{p}ui:USER`.
    var sets: [Bool]

    /// How many commands `commands` sends per channel.
    static let commandCount = 7

    /// The commands that read one channel.
    static func commands(_ channel: [UInt8]) -> [[[UInt8]]] {
        let p = ReshardTestData.prefix
        func key(_ stem: String) -> [UInt8] { Array((p + stem).utf8) + channel }
        return [[Array("HGETALL".utf8), key("m:")], [Array("LRANGE".utf8), key("l:"), Array("0".utf8), Array("-1".utf8)],
                [Array("XRANGE".utf8), key("h:"), Array("-".utf8), Array("+".utf8)],
                [Array("XINFO".utf8), Array("STREAM".utf8), key("h:")],
                [Array("ZSCORE".utf8), Array((p + "sk").utf8), channel], [Array("ZSCORE".utf8), Array((p + "hi").utf8), channel],
                [Array("HGET".utf8), key("m:"), Array("hu".utf8)]]
    }

    /// Every channel of `channels` found on `link` (nil for those it does not hold).
    static func read(_ link: PipelinedRedis, _ channels: [[UInt8]]) throws -> [[UInt8]: ChannelSnapshot] {
        var found: [[UInt8]: ChannelSnapshot] = [:]
        for start in stride(from: 0, to: channels.count, by: 1_000) {
            let batch = Array(channels[start..<min(start + 1_000, channels.count)])
            let replies = try link.pipeline(batch.flatMap(commands))
            var users: [([UInt8], [UInt8])] = []
            for (at, channel) in batch.enumerated() {
                let r = Array(replies[(at * commandCount)..<((at + 1) * commandCount)])
                guard let fields = r[0].elements, !fields.isEmpty else { continue }
                let pairs = stride(from: 0, to: fields.count - 1, by: 2).map { [fields[$0].bytes ?? [], fields[$0 + 1].bytes ?? []] }
                    .sorted { $0[0].lexicographicallyPrecedes($1[0]) }
                var streamState: [RedisReply]?
                if let info = r[3].elements {
                    streamState = stride(from: 0, to: info.count - 1, by: 2).compactMap { at in
                        let name = info[at].bytes.map { String(decoding: $0, as: UTF8.self) }
                        return name == "last-generated-id" || name == "entries-added" ? info[at + 1] : nil
                    }
                }
                found[channel] = ChannelSnapshot(hash: pairs.flatMap { $0 }, list: r[1], stream: r[2], streamState: streamState,
                                                 sets: [r[4] != .null, r[5] != .null, false])
                if let user = r[6].bytes { users.append((channel, user)) }
            }
            let inUser = try link.pipeline(users.map { [Array("ZSCORE".utf8), Array((ReshardTestData.prefix + "ui:").utf8) + $0.1, $0.0] })
            for ((channel, _), reply) in zip(users, inUser) { found[channel]?.sets[2] = reply != .null }
        }
        return found
    }

    /// Whether `link` holds any of the channel's three keys.
    static func holdsAny(_ link: PipelinedRedis, _ channels: [[UInt8]]) throws -> [[UInt8]] {
        let p = ReshardTestData.prefix
        let replies = try link.pipeline(channels.map { channel in
            [Array("EXISTS".utf8)] + ["m:", "h:", "l:"].map { Array((p + $0).utf8) + channel }
        })
        return zip(channels, replies).compactMap { $1.integer == 0 ? nil : $0 }
    }
}

/// A server's counters as Redis holds them (`{p}rb`, `{p}hb`, `{p}ub:USER`, `{p}uh`, and the
/// sizes of `{p}sk` and `{p}hi`), zero entries left out.
struct ServerCounters: Equatable, CustomStringConvertible {
    var retainedBytes = 0
    var historyBytes = 0
    var userRetained: [String: Int] = [:]
    var userHistory: [String: Int] = [:]
    var retainedChannels = 0
    var streams = 0

    var description: String {
        "rb \(retainedBytes) hb \(historyBytes) ub \(userRetained.sorted { $0.key < $1.key }) "
            + "uh \(userHistory.sorted { $0.key < $1.key }) sk \(retainedChannels) hi \(streams)"
    }

    /// Reads them from `link`.
    static func read(_ link: PipelinedRedis) throws -> ServerCounters {
        let p = ReshardTestData.prefix
        func number(_ reply: RedisReply) -> Int { reply.bytes.flatMap { Int(String(decoding: $0, as: UTF8.self)) } ?? reply.integer ?? 0 }
        let replies = try link.pipeline([["GET", p + "rb"], ["GET", p + "hb"], ["HGETALL", p + "uh"], ["ZCARD", p + "sk"],
                                         ["ZCARD", p + "hi"]].map { $0.map { Array($0.utf8) } })
        var counters = ServerCounters(retainedBytes: number(replies[0]), historyBytes: number(replies[1]),
                                      retainedChannels: number(replies[3]), streams: number(replies[4]))
        let uh = replies[2].elements ?? []
        for at in stride(from: 0, to: uh.count - 1, by: 2) where number(uh[at + 1]) != 0 {
            counters.userHistory[String(decoding: uh[at].bytes ?? [], as: UTF8.self)] = number(uh[at + 1])
        }
        var cursor = "0"
        repeat {
            let page = try link.run(["SCAN", cursor, "MATCH", p + "ub:*", "COUNT", "1000"].map { Array($0.utf8) }).elements ?? []
            cursor = page.first?.bytes.map { String(decoding: $0, as: UTF8.self) } ?? "0"
            let keys = page.count > 1 ? page[1].elements?.compactMap(\.bytes) ?? [] : []
            let values = try link.pipeline(keys.map { [Array("GET".utf8), $0] })
            for (key, value) in zip(keys, values) where number(value) != 0 {
                counters.userRetained[String(decoding: key.dropFirst((p + "ub:").utf8.count), as: UTF8.self)] = number(value)
            }
        } while cursor != "0"
        return counters
    }

    /// The same counters summed from the hashes of the `channels` that `link` holds, by the
    /// scripts' own rules written out again here: `#CH + c` per channel holding a value or
    /// a list (per holder `u` too), `cb - tb` plus 4,352 per stream, `hc - tb` plus 4,352 per
    /// charged history user.
    static func sum(_ link: PipelinedRedis, _ channels: [[UInt8]]) throws -> ServerCounters {
        let p = ReshardTestData.prefix
        var counters = ServerCounters()
        let fields: [[UInt8]] = ["k", "c", "u", "cb", "tb", "hc", "hu"].map { Array($0.utf8) }
        var commands: [[[UInt8]]] = []
        for channel in channels {
            let meta: [UInt8] = Array((p + "m:").utf8) + channel
            let stream: [UInt8] = Array((p + "h:").utf8) + channel
            commands.append([Array("HMGET".utf8), meta] + fields)
            commands.append([Array("EXISTS".utf8), stream])
        }
        let replies = try link.pipeline(commands)
        for (at, channel) in channels.enumerated() {
            guard let values = replies[2 * at].elements, values.count == 7 else { continue }
            func text(_ index: Int) -> String? { values[index].bytes.map { String(decoding: $0, as: UTF8.self) } }
            func int(_ index: Int) -> Int { text(index).flatMap { Int($0) } ?? 0 }
            let stream = replies[2 * at + 1].integer == 1
            if text(0) == "v" || text(0) == "l" {
                counters.retainedChannels += 1
                counters.retainedBytes += channel.count + int(1)
                if let user = text(2), !user.isEmpty { counters.userRetained[user, default: 0] += channel.count + int(1) }
            }
            if stream { counters.streams += 1 }
            counters.historyBytes += int(3) - int(4) + (stream ? 4_352 : 0)
            if text(5) != nil, let user = text(6) { counters.userHistory[user, default: 0] += int(5) - int(4) + 4_352 }
        }
        counters.userHistory = counters.userHistory.filter { $0.value != 0 }
        counters.userRetained = counters.userRetained.filter { $0.value != 0 }
        return counters
    }

    /// Adds `other` in (totals over servers).
    static func + (lhs: ServerCounters, rhs: ServerCounters) -> ServerCounters {
        ServerCounters(retainedBytes: lhs.retainedBytes + rhs.retainedBytes, historyBytes: lhs.historyBytes + rhs.historyBytes,
                       userRetained: lhs.userRetained.merging(rhs.userRetained, uniquingKeysWith: +),
                       userHistory: lhs.userHistory.merging(rhs.userHistory, uniquingKeysWith: +),
                       retainedChannels: lhs.retainedChannels + rhs.retainedChannels, streams: lhs.streams + rhs.streams)
    }
}
