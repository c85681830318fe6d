import Foundation
import HeraldTestSupport
import Testing

/// `HERALD_TEST_SHARDS=N` runs the cluster suites over N Redis shards (issue 33): a node
/// config naming `redis: "redis://127.0.0.1:PORT"` gets `shards: [that, N-1 more]` instead,
/// the extra Redis servers made for that first one and shared by every node that names it.
/// A proxy in front of Redis and a password-protected one are left as they are.
/// They stop 30 s after the last node using them went (a test may start its nodes again on
/// the same data), and at the end of the test process.
enum TestShards {
    /// How many shards the cluster suites run over (1: `redis` as written).
    static let count = max(1, Int(ProcessInfo.processInfo.environment["HERALD_TEST_SHARDS"] ?? "") ?? 1)

    private struct Extras {
        var servers: [TestRedis]
        var users = 0
        var releasedAt: Date?
    }

    private static let lock = NSLock()
    nonisolated(unsafe) private static var extras: [Int: Extras] = [:]
    nonisolated(unsafe) private static var stopsAtExit = false

    /// `config` with its single Redis URL made a shard list, and the port of the first
    /// shard (to `release` when the node goes); unchanged (nil) with one shard.
    static func sharded(_ config: String) -> (String, Int?) {
        guard count > 1 else { return (config, nil) }
        let stem = #"redis: "redis://127.0.0.1:"#
        guard let start = config.range(of: stem) else { return (config, nil) }
        let digits = config[start.upperBound...].prefix { $0.isNumber }
        let end = config.index(start.upperBound, offsetBy: digits.count)
        // A proxy in front of Redis (partition tests) and a password-protected Redis stay
        // one shard: their extra shards would not be behind the same proxy or password.
        guard let port = Int(digits), end < config.endIndex, config[end] == "\"", TestRedis.isServer(port: port),
              !config.contains("redis_password") else { return (config, nil) }
        guard let others = acquire(port) else { return (config, nil) }
        let list = (["redis://127.0.0.1:\(port)"] + others.map { "redis://127.0.0.1:\($0)" })
            .map { "\"" + $0 + "\"" }.joined(separator: ", ")
        return (config.replacingCharacters(in: start.lowerBound...end, with: "shards: [" + list + "]"), port)
    }

    /// The ports of the extra shards for `port`'s Redis, made when needed.
    private static func acquire(_ port: Int) -> [Int]? {
        lock.lock()
        defer { lock.unlock() }
        if !stopsAtExit {
            stopsAtExit = true
            atexit { TestShards.stopAll() }
        }
        collect()
        if extras[port] == nil {
            guard let servers = try? (1..<count).map({ _ in try TestRedis() }) else { return nil }
            extras[port] = Extras(servers: servers)
        }
        extras[port]?.users += 1
        extras[port]?.releasedAt = nil
        return extras[port]?.servers.map(\.port)
    }

    /// A node that used `port`'s extra shards is gone.
    static func release(_ port: Int) {
        lock.lock()
        defer { lock.unlock() }
        guard var entry = extras[port] else { return }
        entry.users -= 1
        if entry.users <= 0 { entry.releasedAt = Date() }
        extras[port] = entry
    }

    /// The servers of shards nobody used for 30 s: stopped (their first shard's port may be
    /// given to a new Redis, which must not find their data).
    private static func collect() {
        let now = Date()
        for (port, entry) in extras where entry.users <= 0 {
            guard let at = entry.releasedAt, now.timeIntervalSince(at) > 30 else { continue }
            extras[port] = nil
        }
    }

    /// The extra shards named for the Redis on `port` (a test that stops one of them).
    static func servers(for port: Int) -> [TestRedis] {
        lock.lock()
        defer { lock.unlock() }
        return extras[port]?.servers ?? []
    }

    private static func stopAll() {
        lock.lock()
        let all = extras.values.flatMap(\.servers)
        extras = [:]
        lock.unlock()
        for server in all { server.stop() }
    }
}

extension Trait where Self == ConditionTrait {
    /// A test that plays a fault on "the" Redis or checks a data-set-wide figure exactly
    /// (one Redis's `max_retained_bytes`, `history_bytes`, a user's `retained_bytes`, the keys
    /// it holds): with several shards that Redis is only shard 0 and each shard bounds its
    /// share, so it runs with one shard; `ClusterShardServingTests` plays the shard faults.
    static var oneRedisOnly: Self {
        .disabled(if: TestShards.count > 1, "plays a fault on one Redis (or a partition from it), or counts its figures")
    }
}
