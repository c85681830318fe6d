import Foundation
import HeraldTestSupport
import Testing
@testable import HeraldServer

/// Channels written into a sharded cluster's Redis servers by the cluster's own scripts
/// (`state`, `publishOne`, `settle`, run with `EVALSHA` as a node runs them), so every key
/// and counter has exactly the shape and value the engine gives it; and what the reshard
/// tests read back: each channel's whole state, and each server's counters.
struct ReshardTestData {
    /// The key prefix.
    static let prefix = ClusterSettings.defaultKeyPrefix

    /// The scripts with a history (the default config) and without (channels with no stream).
    private let withHistory = ClusterScriptParameters(prefix: prefix, config: Config())
    private let withoutHistory: ClusterScriptParameters = {
        var config = Config()
        config.history = 0
        return ClusterScriptParameters(prefix: prefix, config: config)
    }()

    /// The channel names: varied lengths and bytes (a space, UTF-8, a colon), as a tool that
    /// treats names as bytes must carry them.
    static func channels(_ count: Int) -> [[UInt8]] {
        (0..<count).map { n in
            switch n % 4 {
            case 0: return Array("app.\(n).state".utf8)
            case 1: return Array("room.ü\(n)".utf8)
            case 2: return Array("feed.\(n):x y".utf8)
            default: return Array("c\(n)".utf8)
            }
        }
    }

    /// A connection to a test Redis.
    static func connect(_ redis: TestRedis, password: String? = nil) throws -> PipelinedRedis {
        try PipelinedRedis(RedisAddress(host: "127.0.0.1", port: redis.port),
                           credentials: password.map { RedisCredentials(user: nil, password: $0) })
    }

    /// Writes `channels` over `links` placed by `list` (one link per shard, in order), each in
    /// one of five shapes: a value with history, a list with history, history alone (some
    /// long enough to be trimmed), a tombstone, a value without history. Every channel with
    /// history is then charged to its user by `settle`, with the bytes the calls kept (as a
    /// node counts them: the state script says, a publish keeps its records plus 40 each).
    func populate(_ links: [PipelinedRedis], list: ShardList, channels: [[UInt8]]) throws {
        let shas = try links.map { link in
            try [ClusterStateScripts.state(withHistory), ClusterStateScripts.state(withoutHistory),
                 ClusterScripts.publishOne(withHistory), ClusterHistoryScripts.settle(withHistory)].map { script in
                guard case .string(let sha) = try link.run(["SCRIPT", "LOAD", script].map { Array($0.utf8) }) else {
                    throw TestDataError("SCRIPT LOAD failed")
                }
                return sha
            }
        }
        var calls = [[Call]](repeating: [], count: links.count)
        var charged = [[[UInt8]: [[UInt8]]]](repeating: [:], count: links.count)
        for (n, channel) in channels.enumerated() {
            let shard = list.map.shard(of: channel)
            let user = Array("user\(n % 7)".utf8)
            calls[shard] += writes(n, channel, user: user, shas: shas[shard])
            if n % 5 != 4 { charged[shard][user, default: []].append(channel) }
        }
        for (shard, link) in links.enumerated() {
            var kept = 0
            for start in stride(from: 0, to: calls[shard].count, by: 2_000) {
                let batch = calls[shard][start..<min(start + 2_000, calls[shard].count)]
                let replies = try link.pipeline(batch.map(\.command))
                for (call, reply) in zip(batch, replies) {
                    if let failure = reply.failure { throw TestDataError("a script failed: \(failure)") }
                    if let bytes = call.keeps {
                        kept += bytes
                    } else if let text = reply.bytes, let last = String(decoding: text, as: UTF8.self).split(separator: " ").last {
                        kept += Int(last) ?? 0
                    }
                }
            }
            var settle: [[UInt8]] = [Array("EVALSHA".utf8), shas[shard][3], Array("0".utf8), Array(String(kept).utf8)]
            for (user, names) in charged[shard].sorted(by: { $0.key.lexicographicallyPrecedes($1.key) }) {
                settle += [user, Array("1000000000".utf8), Array(String(names.count).utf8)] + names
            }
            if let failure = try link.run(settle).failure { throw TestDataError("settle failed: \(failure)") }
        }
    }

    /// One script call, and the history bytes it keeps when the caller knows them (a
    /// publish); nil: the reply's last number says (a state op).
    private struct Call {
        let command: [[UInt8]]
        let keeps: Int?
    }

    /// The script calls for channel number `n`.
    private func writes(_ n: Int, _ channel: [UInt8], user: [UInt8], shas: [[UInt8]]) -> [Call] {
        let from = Array(String((1 << 32) | 7).utf8)
        let limit = Array("1000000000 ".utf8) + user
        func state(_ sha: [UInt8], _ op: String, _ value: String, _ items: [String] = [], user: [UInt8]) -> Call {
            Call(command: [Array("EVALSHA".utf8), sha, Array("0".utf8), [], Array(op.utf8), channel, from, Array(value.utf8), [], user]
                    + items.map { Array($0.utf8) },
                 keeps: sha == shas[1] ? 0 : nil)
        }
        func publish(_ events: Int) -> Call {
            var blob: [UInt8] = []
            for event in 0..<events {
                blob += ClusterRecord(seq: 0, from: (1 << 32) | 7, channel: channel,
                                      data: Array("{\"n\":\(n),\"e\":\(event)}".utf8)).encoded
            }
            return Call(command: [Array("EVALSHA".utf8), shas[2], Array("0".utf8), channel, Array(String(events).utf8), [], blob],
                        keeps: blob.count + 40 * events)
        }
        switch n % 5 {
        case 0:
            return [state(shas[0], "set", "{\"n\":\(n)}", user: limit), publish(3)]
        case 1:
            let items = ["1", "\"two\"", "{\"x\":\(n)}"]
            return [state(shas[0], "setl", "[" + items.joined(separator: ",") + "]", items, user: limit),
                    state(shas[0], "append", "\"more\"", user: limit)]
        case 2:
            // Some long enough (12 runs of 20, past `history` 100) to be trimmed: `tb`, `t0…`.
            let long = n % 50 == 2
            return (0..<(long ? 12 : 2)).map { _ in publish(long ? 20 : 1) }
        case 3:
            return [state(shas[0], "set", "\"gone soon\"", user: limit), state(shas[0], "del", "", user: limit)]
        default:
            return [state(shas[1], "set", "\(n)", user: [])]
        }
    }
}

/// A test's data could not be written.
struct TestDataError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
