import Foundation
import HeraldTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A publish flood through a cluster (issue 29, "Cluster mode at the speed of one node"):
/// three nodes on one Redis, two publishers on two nodes pipelining receipted `pub`s of 1 KiB
/// as fast as their sockets take them, one subscriber on the third node. Redis (or a node)
/// falling behind must slow the publishers (backpressure: their nodes stop reading them) and
/// never cost an event, a receipt, a node's liveness or a Redis link (docs/cluster.md,
/// "Backpressure and the control link").
///
/// Before issue 29 the first test failed every time (four runs): the liveness refresh waited
/// past `node_timeout_ms` behind the flood on the command link, so a publishing node was
/// declared down by the others and cut its links ("Redis stopped answering"), its in-flight
/// publishes answered `unavailable`; or the subscriber's node, sent one 48 MB batch, was
/// disconnected by Redis for its output buffer. 16,500 to 85,000 of the 200,000 events
/// never arrived.
@Suite(.enabled(if: TestRedis.isAvailable, "needs Debian's redis-server"), .serialized)
struct ClusterFloodServingTests {
    /// Channels `flood.0` … `flood.999`; publish `k` goes to `flood.(k % channels)`.
    private static let channels = 1_000
    /// How long a reader waits for its next line before it gives up.
    private static let idleSeconds = 30.0

    @Test(.timeLimit(.minutes(6)))
    func aPublishFloodIsSlowedNeverLostAndDeclaresNoNodeDown() throws {
        try flood(perPublisher: 100_000)
    }

    /// The subscriber's node stops reading for 6 s (SIGSTOP; `node_timeout_ms` 20 s here, so
    /// it is slow, not dead): at this rate Redis's output buffer for it passes its 32 MB
    /// limit within that time, and Redis closes the connection with every event in it (it
    /// did without `PubSubBacklog`: 5,580 events lost). The publishing nodes see the backlog
    /// and pause their publishers until it is read. What they had already sent still lands
    /// in it, so the backlog can reach (publishing nodes + 1) × `max_outstanding_bytes`
    /// (docs/operations.md): 4 MiB here keeps two publishing nodes well inside Redis's
    /// default 32 MB (with the default 8 MiB one run reached 27.8 MB).
    @Test(.timeLimit(.minutes(4)))
    func aNodeThatStopsReadingHoldsThePublishersInsteadOfLosingItsEvents() throws {
        try flood(perPublisher: 60_000, stopSubscriberNodeFor: 6, cluster: "node_timeout_ms: 20000, max_outstanding_bytes: 4194304")
    }

    /// Node `name` with a monitor port and `cluster` keys added to its section.
    private func node(_ redis: TestRedis, _ name: String, workers: Int, cluster: String) throws -> DaemonProcess {
        let more = cluster.isEmpty ? "" : ", " + cluster
        return try DaemonProcess(config: #"monitor_port: 0, cluster: { redis: "redis://127.0.0.1:\#(redis.port)", node: "\#(name)"\#(more) },"#,
                                 arguments: ["--workers", String(workers)])
    }

    /// A metric's value on a node's `/metrics`, or nil when absent.
    private func metric(_ daemon: DaemonProcess, _ name: String) throws -> Int? {
        let body = try HTTPTestClient.request("GET", "/metrics", port: try daemon.monitorPort()).body
        let line = body.split(separator: "\n").first { $0.hasPrefix(name + " ") }
        return line.flatMap { Double($0.dropFirst(name.count + 1)) }.map { Int($0) }
    }

    /// Runs the flood and checks everything arrived once, in order, with nothing lost on the
    /// way.
    /// - Parameters:
    ///   - stop: when set, the subscriber's node is stopped that long, a second into the flood.
    ///   - cluster: keys added to the nodes' `cluster` sections (none: every default, among
    ///     them `node_timeout_ms` 5 s).
    private func flood(perPublisher: Int, stopSubscriberNodeFor stop: Double? = nil, cluster: String = "") throws {
        let redis = try TestRedis()
        // n0 runs two loops: its publisher (the node's first connection, id 1) lives on the
        // second one, so pausing and resuming it crosses loops.
        let nodes = try [("n0", 2), ("n1", 1), ("n2", 1)].map { name, workers in
            try node(redis, name, workers: workers, cluster: cluster)
        }
        let publishers = try nodes[0...1].map { try ClusterTestNodes.client($0).0 }
        let (subscriber, _) = try ClusterTestNodes.client(nodes[2])
        try ClusterTestNodes.ok(subscriber, #"{"op":"sub","ch":"flood.>","sub":"f"}"#, "sub")
        let (watcher, _) = try ClusterTestNodes.client(nodes[0])
        try ClusterTestNodes.ok(watcher, #"{"op":"sub","ch":"$sys.node.down","sub":"d"}"#, "sub")

        let sampler = FloodRun.sample(ports: try nodes.map { try $0.monitorPort() }, redis: redis)
        let started = Date()
        let receipts = publishers.enumerated().map { index, client in
            FloodRun.receipts(of: client, expected: perPublisher, idleSeconds: Self.idleSeconds, name: "publisher \(index)")
        }
        for (index, client) in publishers.enumerated() {
            FloodRun.publish(to: client, publisher: index, count: perPublisher, channels: Self.channels)
        }
        let total = perPublisher * publishers.count
        let delivery = FloodRun.events(of: subscriber, expected: total, idleSeconds: Self.idleSeconds)
        if let stop {
            Thread.sleep(forTimeInterval: 1)
            nodes[2].signal(SIGSTOP)
            Thread.sleep(forTimeInterval: stop)
            nodes[2].signal(SIGCONT)
        }
        let outcomes = receipts.map { $0.wait() }
        let delivered = delivery.wait()
        let elapsed = Date().timeIntervalSince(started)
        let highest = sampler.stop()
        print("flood: \(total) receipted publishes of \(FloodRun.padding + 10) B over \(Self.channels) channels"
              + " in \(String(format: "%.1f", elapsed)) s; highest figures per node (and Redis's largest pub/sub backlog): \(highest)")

        for (index, outcome) in outcomes.enumerated() {
            #expect(outcome.ok == perPublisher && outcome.missing == 0,
                    "publisher \(index): \(outcome.ok) ok of \(perPublisher), \(outcome.missing) never answered")
            #expect(outcome.errors.isEmpty, "publisher \(index): \(outcome.errorCount) errors, first: \(outcome.errors)")
        }
        #expect(delivered.count == total, "\(delivered.count) of \(total) events delivered (\(delivered.stop))")
        #expect(delivered.duplicates == 0, "\(delivered.duplicates) events delivered twice")
        #expect(delivered.malformed.isEmpty, "unexpected lines: \(delivered.malformed)")
        let gaps = delivered.seqProblems(channels: Self.channels, perChannel: total / Self.channels)
        #expect(gaps.isEmpty, "channels whose seqs are not 1...n in order: \(gaps.prefix(5)) (\(gaps.count) channels)")
        #expect(delivered.orderProblems == 0, "\(delivered.orderProblems) events out of their publisher's order")

        #expect(throws: (any Error).self, "no node declared down") { _ = try watcher.frame(timeout: 0.5) }
        for (index, node) in nodes.enumerated() {
            let log = node.log
            let bad = log.filter { line in
                ["declared down", "stopped answering", "connection lost", "did not acknowledge"].contains { line.contains($0) }
            }
            #expect(bad.isEmpty, "n\(index): \(bad.prefix(5))")
            #expect(log.filter { $0.contains("cluster ready") }.count == 1, "n\(index) connected to Redis once")
        }
        let closed = redis.log.split(separator: "\n").filter { $0.contains("output buffer limits") }
        #expect(closed.isEmpty, "Redis closed a node's connection: \(closed)")
        for (index, node) in nodes.enumerated() {
            let deadline = Date().addingTimeInterval(5)
            while try metric(node, "herald_cluster_paused_connections") != 0 || metric(node, "herald_cluster_outstanding_ops") != 0,
                  Date() < deadline {
                Thread.sleep(forTimeInterval: 0.1)
            }
            #expect(try metric(node, "herald_cluster_paused_connections") == 0, "n\(index) resumed every paused connection")
            #expect(try metric(node, "herald_cluster_outstanding_ops") == 0, "n\(index): nothing left awaiting Redis")
            #expect(try metric(node, "herald_cluster_outstanding_bytes") == 0, "n\(index): no bytes left awaiting Redis")
        }
    }
}
