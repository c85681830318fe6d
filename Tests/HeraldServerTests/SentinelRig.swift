import Foundation
import HeraldTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// A Redis primary with one replica, three sentinels (quorum 2, down after 1.5 s) and heraldd
/// nodes that find the primary through them (`cluster.sentinel`), all on loopback, for the
/// failover tests. `failover` kills the primary (or asks Sentinel to switch) and waits until
/// the sentinels name the other server, the old one is back as its replica and every
/// sentinel sees that replica healthy, so the next failover can happen.
final class SentinelRig: @unchecked Sendable {
    /// The two Redis servers; which is primary changes with each failover.
    let servers: [TestRedis]
    /// The sentinels.
    let sentinels: [TestSentinel]
    /// The heraldd nodes.
    let nodes: [DaemonProcess]
    /// The name the sentinels monitor the primary under.
    static let master = "herald"
    /// A replica's full sync starts at once (Redis 7 waits 5 s for more replicas by default).
    static let serverArguments = ["--repl-diskless-sync-delay", "0"]

    /// Why the rig could not get where it had to.
    struct Stuck: Error, CustomStringConvertible {
        /// What it waited for, and what the servers said then.
        let description: String
    }

    /// Starts everything and waits until the sentinels know the replica and each other.
    /// `waitReplicas` nil leaves `wait_replicas` out (its default under Sentinel).
    init(nodes count: Int, waitReplicas: Int?, nodeTimeoutMs: Int = 5_000) throws {
        let primary = try TestRedis(extraArguments: Self.serverArguments)
        let replica = try TestRedis(extraArguments: Self.serverArguments + ["--replicaof", "127.0.0.1", String(primary.port)])
        servers = [primary, replica]
        try Self.waitFor("the replica to sync", seconds: 15) { Self.isSyncedReplica(replica.port, of: primary.port) }
        sentinels = try (0..<3).map { _ in try TestSentinel(master: Self.master, primaryPort: primary.port, downAfterMs: 1_500) }
        let sentinels = sentinels
        try Self.waitFor("the sentinels to know the replica and each other", seconds: 30) {
            sentinels.allSatisfy { $0.otherSentinels() == 2 && $0.replicaFlags()[replica.port] == "slave" }
        }
        let addresses = sentinels.map { "\"127.0.0.1:\($0.port)\"" }.joined(separator: ", ")
        nodes = try (0..<count).map { index in
            try DaemonProcess(config: """
                cluster: { sentinel: { master: "\(Self.master)", addresses: [\(addresses)] }, node: "n\(index)", \
                \(waitReplicas.map { "wait_replicas: \($0), " } ?? "")node_timeout_ms: \(nodeTimeoutMs) },
                """, arguments: ["--workers", "1"])
        }
    }

    /// The server the sentinels name as primary now (the first that answers).
    func primary() -> TestRedis? {
        for sentinel in sentinels {
            if let port = sentinel.primaryPort() { return servers.first { $0.port == port } }
        }
        return nil
    }

    /// One failover: SIGKILL the primary (or `SENTINEL FAILOVER` when `kill` is false),
    /// wait until every sentinel names the other server and it says it is a primary, start
    /// a killed one again as its replica, and wait until the pair is healthy again
    /// (`isHealthy`: whatever Sentinel did meanwhile, one agreed primary and its replica).
    /// - Returns: seconds from the kill until every sentinel named the new primary.
    @discardableResult
    func failover(kill: Bool = true) throws -> Double {
        guard let old = primary(), let new = servers.first(where: { $0 !== old }) else { throw Stuck(description: "no primary named") }
        let started = Date()
        let sentinels = sentinels
        if kill {
            old.stop()
        } else {
            try Self.waitFor("Sentinel to accept FAILOVER", seconds: 15) {
                RedisCommandLine.run(port: sentinels[0].port, ["SENTINEL", "FAILOVER", Self.master]) == .text("OK")
            }
        }
        try Self.waitFor("the sentinels to promote \(new.port)", seconds: 30) {
            sentinels.allSatisfy { $0.primaryPort() == new.port }
                && RedisCommandLine.run(port: new.port, ["ROLE"])?.elements?.first == .text("master")
        }
        let switched = Date().timeIntervalSince(started)
        if kill { try old.restart(extraArguments: Self.serverArguments + ["--replicaof", "127.0.0.1", String(new.port)]) }
        try Self.waitFor("a primary and its replica, both known to every sentinel", seconds: 60, isHealthy, else: describe)
        return switched
    }

    /// Whether every sentinel names one primary that says so, and the other server is its
    /// replica with its link up, seen by every sentinel as a healthy replica.
    func isHealthy() -> Bool {
        let named = Set(sentinels.map { $0.primaryPort() })
        guard named.count == 1, let port = named.first ?? nil, let replica = servers.first(where: { $0.port != port }),
              RedisCommandLine.run(port: port, ["ROLE"])?.elements?.first == .text("master") else { return false }
        return Self.isSyncedReplica(replica.port, of: port) && sentinels.allSatisfy { $0.replicaFlags()[replica.port] == "slave" }
    }

    /// What the servers and sentinels say, for a failure message.
    func describe() -> String {
        let roles = servers.map { server in
            let role = RedisCommandLine.run(port: server.port, ["ROLE"])?.elements?.prefix(3).map { "\($0)" } ?? ["down"]
            return "\(server.port): \(role.joined(separator: " "))"
        }
        let views = sentinels.map { "sentinel \($0.port): primary \($0.primaryPort().map(String.init) ?? "?"), replicas \($0.replicaFlags())" }
        return (roles + views).joined(separator: "; ")
    }

    /// Whether `port` is a replica of `primary` with its link up.
    static func isSyncedReplica(_ port: Int, of primary: Int) -> Bool {
        guard let info = RedisCommandLine.run(port: port, ["INFO", "replication"])?.text else { return false }
        return info.contains("master_port:\(primary)\r") && info.contains("master_link_status:up")
    }

    /// Polls `condition` every 50 ms. - Throws: `Stuck` naming `what` (and what `state`
    /// says) after `seconds`.
    static func waitFor(_ what: String, seconds: Double, _ condition: () -> Bool, else state: () -> String = { "" }) throws {
        let deadline = Date().addingTimeInterval(seconds)
        while !condition() {
            guard Date() < deadline else { throw Stuck(description: "timed out waiting for \(what) \(state())") }
            usleep(50_000)
        }
    }
}
