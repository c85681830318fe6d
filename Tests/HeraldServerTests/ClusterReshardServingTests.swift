import Foundation
import HeraldTestSupport
import Testing
@testable import HeraldServer
#if canImport(Glibc)
import Glibc
#endif

/// `heraldd --reshard OLD NEW` (issue 33): the real binary against real `redis-server`s
/// holding channels the cluster's own scripts wrote. Every channel's hash, list and stream
/// (entries, ids, last id) must be the same bytes afterwards, on its NEW server and nowhere
/// else; the counters each server holds must be the sums of its channels and add up to what
/// the scripts had counted; a run killed mid-way must resume and finish.
@Suite(.enabled(if: TestRedis.isAvailable, "needs Debian's redis-server"), .serialized)
struct ClusterReshardServingTests {
    private let data = ReshardTestData()

    /// `redis://127.0.0.1:PORT` of each, joined by `,`.
    private func list(_ servers: [TestRedis]) -> String {
        servers.map { "redis://127.0.0.1:\($0.port)" }.joined(separator: ",")
    }

    /// Writes `count` channels over `servers` as the shards of a cluster; returns the names,
    /// every channel's state, and the counters the scripts left, summed over the servers.
    private func populate(_ servers: [TestRedis], count: Int) throws
        -> (channels: [[UInt8]], before: [[UInt8]: ChannelSnapshot], counters: ServerCounters) {
        let links = try servers.map { try ReshardTestData.connect($0) }
        let channels = ReshardTestData.channels(count)
        try data.populate(links, list: try ShardList(parsing: list(servers)), channels: channels)
        var before: [[UInt8]: ChannelSnapshot] = [:]
        var counters = ServerCounters()
        for link in links {
            before.merge(try ChannelSnapshot.read(link, channels)) { first, _ in first }
            let held = try ServerCounters.read(link)
            // The rules the tool recomputes by give what the scripts counted, server by server.
            #expect(held == (try ServerCounters.sum(link, channels)), "the scripts' counters are the channels' sums")
            counters = counters + held
        }
        #expect(before.count == count)
        return (channels, before, counters)
    }

    /// Every channel is on its server under `servers` with the state it had, on no other of
    /// `all`; each server's counters are its channels' sums; the totals are `counters`.
    private func expectPlaced(_ channels: [[UInt8]], _ before: [[UInt8]: ChannelSnapshot], counters: ServerCounters,
                              on servers: [TestRedis], all: [TestRedis],
                              sourceLocation: SourceLocation = #_sourceLocation) throws {
        let placement = try ShardList(parsing: list(servers))
        var total = ServerCounters()
        var placed = 0
        for redis in all {
            let link = try ReshardTestData.connect(redis)
            let mine = channels.filter { placement.home(of: $0).port == redis.port }
            let others = channels.filter { placement.home(of: $0).port != redis.port }
            let now = try ChannelSnapshot.read(link, mine)
            let differing = mine.filter { now[$0] != before[$0] }.map { String(decoding: $0, as: UTF8.self) }
            #expect(differing.isEmpty, "\(differing.count) channels differ on \(redis.port), such as \(differing.prefix(5))",
                    sourceLocation: sourceLocation)
            placed += now.count
            let strays = try ChannelSnapshot.holdsAny(link, others)
            #expect(strays.isEmpty, "\(strays.count) channels also on \(redis.port)", sourceLocation: sourceLocation)
            let held = try ServerCounters.read(link)
            #expect(held == (try ServerCounters.sum(link, mine)), "counters on \(redis.port)", sourceLocation: sourceLocation)
            total = total + held
        }
        #expect(placed == channels.count, sourceLocation: sourceLocation)
        #expect(total == counters, "the totals are the scripts' totals", sourceLocation: sourceLocation)
        let control = try ReshardTestData.connect(servers[0])
        #expect(try control.run("GET", ReshardTestData.prefix + "shards").bytes == Array(list(servers).utf8),
                sourceLocation: sourceLocation)
        #expect(try control.run("EXISTS", ReshardTestData.prefix + "reshard").integer == 0, sourceLocation: sourceLocation)
    }

    @Test func growingTwoShardsToThreeMovesAThirdWithTheirWholeState() throws {
        let servers = try (0..<3).map { _ in try TestRedis() }
        let (channels, before, counters) = try populate(Array(servers[0..<2]), count: 2_000)
        let result = try runDaemon(["--reshard", list(Array(servers[0..<2])), list(servers)])
        #expect(result.status == 0, "\(result.output)")
        #expect(result.output.contains("2000 before, 2000 after"), "\(result.output)")
        let moving = channels.filter { ShardMap(count: 3).shard(of: $0) == 2 }.count
        #expect(result.output.contains("\(moving) to move") && moving > 550 && moving < 780, "\(moving): \(result.output)")
        try expectPlaced(channels, before, counters: counters, on: servers, all: servers)
    }

    /// Back to one shard and out again: shrinking empties the servers NEW leaves out.
    @Test func shrinkingToOneShardAndGrowingAgainKeepsEveryChannel() throws {
        let servers = try (0..<3).map { _ in try TestRedis() }
        let (channels, before, counters) = try populate(servers, count: 600)
        let shrink = try runDaemon(["--reshard", list(servers), list([servers[0]])])
        #expect(shrink.status == 0, "\(shrink.output)")
        try expectPlaced(channels, before, counters: counters, on: [servers[0]], all: servers)
        // [A, C]: C takes B's place in the list (every channel NEW puts on C moves there).
        let grow = try runDaemon(["--reshard", list([servers[0]]), list([servers[0], servers[2]])])
        #expect(grow.status == 0, "\(grow.output)")
        try expectPlaced(channels, before, counters: counters, on: [servers[0], servers[2]], all: servers)
    }

    /// Killed mid-way (10,000 channels; the new shard's writes paused so the kill lands
    /// inside a batch), the same command resumes and finishes; another list is refused
    /// meanwhile, and `{p}shards` holds the marker no node's list equals.
    @Test func aKilledReshardResumesAndCompletes() throws {
        let servers = try (0..<3).map { _ in try TestRedis() }
        let (channels, before, counters) = try populate(Array(servers[0..<2]), count: 10_000)
        let old = list(Array(servers[0..<2]))
        let new = list(servers)
        let control = try ReshardTestData.connect(servers[0])
        let newShard = try ReshardTestData.connect(servers[2])
        let process = Process()
        process.executableURL = DaemonProcess.executable
        process.arguments = ["--reshard", old, new]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        var moved = 0
        let deadline = Date().addingTimeInterval(20)
        while moved == 0 && process.isRunning && Date() < deadline {
            moved = try control.run("HGET", ReshardTestData.prefix + "reshard", "moved").bytes
                .flatMap { Int(String(decoding: $0, as: UTF8.self)) } ?? 0
            if moved == 0 { usleep(1_000) }
        }
        _ = try newShard.run("CLIENT", "PAUSE", "10000", "WRITE")
        usleep(300_000)
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        _ = try newShard.run("CLIENT", "UNPAUSE")
        #expect(process.terminationReason == .uncaughtSignal, "killed, not finished (moved \(moved))")
        let recorded = try control.run("HGETALL", ReshardTestData.prefix + "reshard")
        let progress = try ReshardProgress(hash: recorded, key: "reshard")
        #expect(progress?.phase == .move && (progress?.moved ?? 0) > 0 && (progress?.moved ?? 0) < (progress?.moving ?? 0),
                "\(String(describing: progress))")
        #expect(try control.run("GET", ReshardTestData.prefix + "shards").bytes.map { String(decoding: $0, as: UTF8.self) }
                == "resharding from \(old) to \(new)")
        let other = try runDaemon(["--reshard", old, list([servers[0], servers[2]])])
        #expect(other.status == Daemon.usageError && other.output.contains("a reshard from \(old) to \(new) is unfinished"),
                "\(other.output)")
        let resumed = try runDaemon(["--reshard", old, new])
        #expect(resumed.status == 0, "\(resumed.output)")
        #expect(resumed.output.contains("resuming: ") && resumed.output.contains("10000 before, 10000 after"), "\(resumed.output)")
        try expectPlaced(channels, before, counters: counters, on: servers, all: servers)
    }

    /// Nothing changes when the request cannot be carried out: a node still running, a new
    /// server that already holds channels, OLD not what shard 0 records.
    @Test func refusalsChangeNothing() throws {
        let servers = try (0..<3).map { _ in try TestRedis() }
        _ = try populate(Array(servers[0..<2]), count: 50)
        let control = try ReshardTestData.connect(servers[0])
        let p = ReshardTestData.prefix
        let old = list(Array(servers[0..<2]))
        _ = try control.run("HSET", p + "nodes", "4", "n0")
        _ = try control.run("SET", p + "alive:4", "1", "PX", "60000")
        let running = try runDaemon(["--reshard", old, list(servers)])
        #expect(running.status == Daemon.usageError && running.output.contains("node n0 (index 4) is running"), "\(running.output)")
        _ = try control.run("DEL", p + "alive:4")
        _ = try ReshardTestData.connect(servers[2]).run("HSET", p + "m:stale", "seq", "1")
        let occupied = try runDaemon(["--reshard", old, list(servers)])
        #expect(occupied.status == Daemon.usageError && occupied.output.contains("is only in NEW but holds 1 channels"),
                "\(occupied.output)")
        _ = try ReshardTestData.connect(servers[2]).run("DEL", p + "m:stale")
        _ = try control.run("SET", p + "shards", list([servers[0]]))
        let notOld = try runDaemon(["--reshard", old, list(servers)])
        #expect(notOld.status == Daemon.usageError && notOld.output.contains("which is not OLD"), "\(notOld.output)")
        #expect(try control.run("EXISTS", p + "reshard").integer == 0)
        #expect(try control.run("GET", p + "shards").bytes == Array(list([servers[0]]).utf8))
    }

    /// A node's data, written through a real node on one Redis, goes out to three shards
    /// (one of them password-protected) and back; the node started again on it answers
    /// `get` and `since` exactly as before, and no password reaches the output.
    @Test(.oneRedisOnly) func aRealNodesChannelsSurviveARoundTripOverThreeShards() throws {
        let servers = try (0..<3).map { _ in try TestRedis() }
        let secret = "pw-reshard-7c1e"
        _ = try servers[1].command("CONFIG", "SET", "requirepass", secret)
        let single = list([servers[0]])
        let three = "\(single),redis://:\(secret)@127.0.0.1:\(servers[1].port),redis://127.0.0.1:\(servers[2].port)"
        let names = (0..<60).map { "rt.\($0 % 3).n\($0)" }
        let first = try ClusterTestNodes.node(servers[0], "n0")
        let writer = try first.client()
        for (n, name) in names.enumerated() {
            switch n % 3 {
            case 0: try ClusterTestNodes.ok(writer, #"{"op":"set","ch":"\#(name)","value":{"n":\#(n)}}"#, "set")
            case 1:
                try ClusterTestNodes.ok(writer, #"{"op":"set","ch":"\#(name)","value":[\#(n)]}"#, "set")
                try ClusterTestNodes.ok(writer, #"{"op":"append","ch":"\#(name)","value":"x"}"#, "append")
            default: break
            }
            for event in 0..<4 { try ClusterTestNodes.ok(writer, #"{"op":"pub","ch":"\#(name)","data":\#(event),"rid":1}"#, "pub") }
        }
        let before = try names.map { try observe(first, $0) }
        first.signal(SIGTERM)
        #expect(first.waitForExit(seconds: 10) == 0)
        let out = try runDaemon(["--reshard", single, three])
        #expect(out.status == 0, "\(out.output)")
        #expect(!out.output.contains(secret), "no password in the output")
        for redis in servers[1...] {
            let link = try ReshardTestData.connect(redis, password: redis === servers[1] ? secret : nil)
            let held = try ChannelSnapshot.holdsAny(link, names.map { Array($0.utf8) })
            #expect(held.count > 5, "\(held.count) channels on \(redis.port)")
        }
        let back = try runDaemon(["--reshard", three, single])
        #expect(back.status == 0, "\(back.output)")
        let again = try ClusterTestNodes.node(servers[0], "n1")
        let after = try names.map { try observe(again, $0) }
        #expect(after == before)
        // Each channel's counter and stream go on where they were.
        let client = try again.client()
        for (n, name) in names.enumerated().prefix(6) {
            let next = try client.request(#"{"op":"pub","ch":"\#(name)","data":"next","rid":1}"#)
            #expect(next["seq"] as? Int == [5, 6, 4][n % 3] + 1, "\(name): \(next)")
        }
    }

    /// The acceptance run: a cluster of real nodes on two shards, populated through them
    /// (10,000 channels with values, lists and history), stopped, resharded to three, and
    /// started again on three: every channel's hash, list and stream are the same bytes on
    /// its new shard, and what a client sees of a sample (`get`, `rev`, the `since: 0`
    /// replay) is the same; counters go on.
    @Test func aPopulatedClusterOfRealNodesGrowsFromTwoShardsToThree() throws {
        let servers = try (0..<3).map { _ in try TestRedis() }
        func node(_ shards: [TestRedis], _ name: String) throws -> DaemonProcess {
            let urls = shards.map { "\"redis://127.0.0.1:\($0.port)\"" }.joined(separator: ", ")
            return try DaemonProcess(config: "cluster: { shards: [\(urls)], node: \"\(name)\" }, history: 50,",
                                     arguments: ["--workers", "1"])
        }
        let two = Array(servers[0..<2])
        var nodes = try [node(two, "a"), node(two, "b")]
        let count = 10_000
        let names = (0..<count).map { "pop.\($0 % 7).c\($0)" }
        for (index, chunk) in stride(from: 0, to: count, by: 500).map({ Array(names[$0..<min($0 + 500, count)]) }).enumerated() {
            let writer = try nodes[index % 2].client()
            var lines: [String] = []
            for name in chunk {
                let n = Int(name.split(separator: "c").last ?? "") ?? 0
                switch n % 3 {
                case 0: lines.append(#"{"op":"set","ch":"\#(name)","value":{"n":\#(n)}}"#)
                case 1: lines += [#"{"op":"set","ch":"\#(name)","value":[\#(n)]}"#, #"{"op":"append","ch":"\#(name)","value":"x"}"#]
                default: break
                }
                lines += (0..<2).map { #"{"op":"pub","ch":"\#(name)","data":\#($0),"rid":1}"# }
            }
            writer.send(lines.joined(separator: "\n"))
            let answers = try lines.map { _ in try writer.frame() }
            #expect(answers.allSatisfy { $0["ok"] != nil }, "every write through the nodes: \(answers.first { $0["ok"] == nil } ?? [:])")
        }
        let sample = stride(from: 0, to: count, by: 97).map { names[$0] }
        let seen = try sample.map { try observe(nodes[0], $0) }
        let channels = names.map { Array($0.utf8) }
        var before: [[UInt8]: ChannelSnapshot] = [:]
        var counters = ServerCounters()
        for redis in two {
            let link = try ReshardTestData.connect(redis)
            before.merge(try ChannelSnapshot.read(link, channels)) { first, _ in first }
            // The channels' own sums: a node's last history bytes may not have been settled
            // when it stopped (the tool recomputes the counters from the channels).
            counters = counters + (try ServerCounters.sum(link, channels))
        }
        #expect(before.count == count, "every channel is on one of the two shards")
        for daemon in nodes {
            daemon.signal(SIGTERM)
            #expect(daemon.waitForExit(seconds: 10) == 0)
        }
        nodes = []
        let result = try runDaemon(["--reshard", list(two), list(servers)])
        #expect(result.status == 0, "\(result.output)")
        #expect(result.output.contains("\(count) before, \(count) after"), "\(result.output)")
        try expectPlaced(channels, before, counters: counters, on: servers, all: servers)
        nodes = try [node(servers, "a2"), node(servers, "b2")]
        let again = try sample.map { try observe(nodes[1], $0) }
        #expect(again == seen, "what a client sees is the same after the move")
        let client = try nodes[0].client()
        for name in sample.prefix(20) {
            let n = Int(name.split(separator: "c").last ?? "") ?? 0
            let next = try client.request(#"{"op":"pub","ch":"\#(name)","data":"next","rid":1}"#)
            #expect(next["seq"] as? Int == [1, 2, 0][n % 3] + 3, "\(name) goes on from its counter: \(next)")
        }
    }

    /// What a client sees of a channel: its `get` answer, whether `since: 0` recovers, and
    /// the whole replay (every frame before the answer to a `ping` sent after the `sub`).
    private func observe(_ node: DaemonProcess, _ name: String) throws -> [String] {
        let client = try node.client()
        client.send(#"{"op":"get","ch":"\#(name)"}"#)
        var lines = [try client.line()]
        let sub = try client.request(#"{"op":"sub","ch":"\#(name)","since":0}"#)
        lines.append("sub \(sub["ok"] ?? "-") recovered \(sub["recovered"] ?? "-")")
        client.send(#"{"op":"ping","rid":"end"}"#)
        while true {
            let line = try client.line()
            if line.contains(#""pong""#) { break }
            lines.append(line)
        }
        return lines
    }
}
