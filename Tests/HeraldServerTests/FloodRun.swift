import Foundation
import HeraldTestSupport

/// The threads of one flood: writers that pipeline publishes without waiting, readers that
/// take receipts and events as they come.
enum FloodRun {
    /// Bytes of filler in each event's `data` (a string: the publish number, a space, then
    /// these): a 1 KiB event makes Redis, not the debug-built nodes, what a flood waits for
    /// (with 200 B the unbounded command link still kept up, its refresh 4 s late at worst).
    static let padding = 1_000
    /// What a publisher's receipts said.
    struct Receipts: Sendable {
        var ok = 0
        var missing = 0
        var errorCount = 0
        /// The first few error lines.
        var errors: [String] = []
    }

    /// What the subscriber got.
    struct Delivery: Sendable {
        /// Every event: channel number, seq, data (publisher × 1,000,000 + publish number).
        var events: [(channel: Int, seq: Int, data: Int)] = []
        var duplicates = 0
        var orderProblems = 0
        var malformed: [String] = []
        var stop = FloodLineReader.StopReason.done

        var count: Int { events.count }

        /// Channels whose `seq`s are not exactly 1...perChannel in arrival order.
        func seqProblems(channels: Int, perChannel: Int) -> [String] {
            var seqs = [[Int]](repeating: [], count: channels)
            for event in events where event.channel < channels { seqs[event.channel].append(event.seq) }
            return seqs.enumerated().compactMap { channel, got in
                got == Array(1...perChannel) ? nil : "flood.\(channel): \(got.count) events, first \(got.prefix(8))"
            }
        }
    }

    /// A result one thread fills and another waits for.
    final class Pending<Value: Sendable>: @unchecked Sendable {
        private let done = DispatchSemaphore(value: 0)
        private var value: Value

        /// Starts with `initial`, what `wait` returns if the thread never finishes it.
        init(_ initial: Value) {
            value = initial
        }

        /// Stores the result and wakes the waiter.
        func finish(_ value: Value) {
            self.value = value
            done.signal()
        }

        /// Waits for the result.
        func wait() -> Value {
            done.wait()
            return value
        }
    }

    /// Polls the nodes' `/metrics` and Redis's pub/sub clients every 100 ms until `stop`,
    /// keeping each cluster figure's highest value per node, and the largest output backlog
    /// Redis held for a node (for the report: how far Redis fell behind, how much was paused).
    /// One thread per source: a stopped node must not hold up the others' figures.
    final class Sampler: @unchecked Sendable {
        private let stopped = LockedValue(false)
        private let highest = LockedValue([[String: Double]]())
        private let done = DispatchSemaphore(value: 0)
        private let sources: Int

        init(ports: [Int], redis: TestRedis) {
            sources = ports.count + 1
            highest.withLock { $0 = Array(repeating: [:], count: ports.count + 1) }
            poll {
                // Redis's output backlog per pub/sub client (`omem`): a node slower than
                // Redis at taking its events.
                guard let clients = try? redis.command("CLIENT", "LIST", "TYPE", "pubsub") else { return [] }
                let omem = clients.split(separator: "\n").compactMap { line in
                    line.split(separator: " ").first { $0.hasPrefix("omem=") }.flatMap { Double($0.dropFirst(5)) }
                }.max() ?? 0
                return [(ports.count, "redis_pubsub_omem", omem)]
            }
            for (index, port) in ports.enumerated() {
                poll {
                    guard let body = try? HTTPTestClient.request("GET", "/metrics", port: port).body else { return [] }
                    return body.split(separator: "\n").compactMap { line in
                        let parts = line.split(separator: " ")
                        guard line.hasPrefix("herald_cluster_"), parts.count == 2, let value = Double(parts[1]) else { return nil }
                        return (index, String(parts[0]), value)
                    }
                }
            }
        }

        /// Runs `read` every 100 ms on a thread of its own, keeping the highest values.
        private func poll(_ read: @escaping @Sendable () -> [(source: Int, name: String, value: Double)]) {
            Thread { [self] in
                while !stopped.value {
                    for (source, name, value) in read() {
                        highest.withLock { $0[source][name] = max($0[source][name] ?? 0, value) }
                    }
                    Thread.sleep(forTimeInterval: 0.1)
                }
                done.signal()
            }.start()
        }

        /// Stops polling. - Returns: the highest values seen, per node, then Redis's.
        func stop() -> [[String: Double]] {
            stopped.withLock { $0 = true }
            for _ in 0..<sources { done.wait() }
            return highest.value
        }
    }

    /// Starts a `Sampler` on the monitor ports.
    static func sample(ports: [Int], redis: TestRedis) -> Sampler { Sampler(ports: ports, redis: redis) }

    /// Writes `count` receipted publishes from one thread, a thousand lines per `send`; a
    /// node that stopped reading blocks the write, which is the backpressure under test.
    static func publish(to client: TestClient, publisher: Int, count: Int, channels: Int) {
        nonisolated(unsafe) let client = client
        Thread {
            let padding = String(repeating: "x", count: FloodRun.padding)
            var chunk: [UInt8] = []
            chunk.reserveCapacity(100_000)
            for k in 0..<count {
                let data = publisher * 1_000_000 + k
                chunk.append(contentsOf: #"{"op":"pub","ch":"flood.\#(k % channels)","data":"\#(data) \#(padding)","rid":\#(k + 1)}"#.utf8)
                chunk.append(10)
                if chunk.count > 60_000 || k == count - 1 {
                    client.send(bytes: chunk)
                    chunk.removeAll(keepingCapacity: true)
                }
            }
        }.start()
    }

    /// Reads a publisher's receipts on another thread until `expected` came or it went idle.
    static func receipts(of client: TestClient, expected: Int, idleSeconds: Double, name: String) -> Pending<Receipts> {
        let pending = Pending(Receipts())
        let fd = client.fd
        Thread {
            let reader = FloodLineReader(fd: fd)
            var result = Receipts()
            var seen = [Bool](repeating: false, count: expected + 1)
            let okPrefix = Array(#"{"ok":"pub""#.utf8)
            let rid = Array(#""rid":"#.utf8)
            var answered = 0
            let pingPrefix = Array(#"{"ping":"#.utf8)
            _ = reader.forEachLine(idleSeconds: idleSeconds) { line in
                if FloodLineReader.starts(line, with: pingPrefix) { return true }
                if FloodLineReader.starts(line, with: okPrefix), let id = FloodLineReader.integer(after: rid, in: line), id <= expected, !seen[id] {
                    seen[id] = true
                    result.ok += 1
                } else {
                    result.errorCount += 1
                    if result.errors.count < 5 { result.errors.append(String(decoding: line, as: UTF8.self)) }
                }
                answered += 1
                return answered < expected
            }
            result.missing = expected - answered
            pending.finish(result)
        }.start()
        return pending
    }

    /// Reads the subscriber's events on another thread until `expected` came or it went idle.
    static func events(of client: TestClient, expected: Int, idleSeconds: Double) -> Pending<Delivery> {
        let pending = Pending(Delivery())
        let fd = client.fd
        Thread {
            let reader = FloodLineReader(fd: fd)
            var result = Delivery()
            result.events.reserveCapacity(expected)
            var seenData = Set<Int>()
            var lastOfPublisher: [Int: Int] = [:]
            let eventPrefix = Array(#"{"event":"flood."#.utf8)
            // Heartbeat pings come to a reader that only reads.
            let pingPrefix = Array(#"{"ping":"#.utf8)
            let seqKey = Array(#""seq":"#.utf8)
            let dataKey = Array(#""data":""#.utf8)
            result.stop = reader.forEachLine(idleSeconds: idleSeconds) { line in
                if FloodLineReader.starts(line, with: pingPrefix) { return true }
                guard FloodLineReader.starts(line, with: eventPrefix),
                      let channel = FloodLineReader.integer(after: eventPrefix, in: line),
                      let seq = FloodLineReader.integer(after: seqKey, in: line),
                      let data = FloodLineReader.integer(after: dataKey, in: line) else {
                    if result.malformed.count < 5 { result.malformed.append(String(decoding: line, as: UTF8.self)) }
                    return true
                }
                if !seenData.insert(data).inserted { result.duplicates += 1 }
                // Per publisher and channel, publish order: key by both.
                let key = (data / 1_000_000) * 10_000 + channel
                if let last = lastOfPublisher[key], last >= data { result.orderProblems += 1 }
                lastOfPublisher[key] = data
                result.events.append((channel, seq, data))
                return result.events.count < expected
            }
            pending.finish(result)
        }.start()
        return pending
    }
}
