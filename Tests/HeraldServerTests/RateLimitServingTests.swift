import Foundation
import HeraldServer
import HeraldTestSupport
import Testing

/// A value shared with a pinging thread.
private final class LockedBox<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Value
    init(_ value: Value) { stored = value }
    var value: Value { lock.withLock { stored } }
    func mutate(_ change: (inout Value) -> Void) { lock.withLock { change(&stored) } }
}

/// Rate limits per user (issue 37, item 3; docs/protocol.md, "Rate limits"): `pub_per_s`,
/// `bytes_in_per_s` and `ops_per_s` are token buckets over a user's connections; past them
/// the connections' reads pause, so nothing is refused or dropped and other users go on.
@Suite struct RateLimitServingTests {
    /// A daemon whose user `slow` (token `s`) has `limits`, beside an unlimited `fast` (`f`).
    private func daemon(_ limits: String) throws -> DaemonProcess {
        try DaemonProcess(config: #"monitor_port: 0, auth: { users: [ { name: "slow", token: "s", limits: { \#(limits) } }, "#
            + #"{ name: "fast", token: "f" } ] }"#)
    }

    private func hello(_ daemon: DaemonProcess, _ token: String) throws -> TestClient {
        let client = try daemon.client()
        #expect(try client.request(#"{"op":"hello","token":"\#(token)"}"#)["ok"] as? String == "hello")
        return client
    }

    /// Pings `client` every 20 ms on a thread until `done`, and returns the round trips (ms).
    private func pingWhile(_ client: TestClient, done: @escaping @Sendable () -> Bool) -> @Sendable () -> [Double] {
        let times = LockedBox<[Double]>([])
        let finished = DispatchSemaphore(value: 0)
        // Only the pinging thread uses the client from here on.
        nonisolated(unsafe) let client = client
        Thread.detachNewThread {
            var n = 0
            while !done() {
                n += 1
                let start = DispatchTime.now().uptimeNanoseconds
                guard (try? client.request(#"{"op":"ping","rid":\#(n)}"#)) != nil else { break }
                times.mutate { $0.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6) }
                Thread.sleep(forTimeInterval: 0.02)
            }
            finished.signal()
        }
        return {
            finished.wait()
            return times.value
        }
    }

    @Test func aThousandReceiptedPublishesAtTwoHundredASecondTakeFourSecondsAllSucceedAndOthersAreNotSlowed() throws {
        let daemon = try daemon("pub_per_s: 200")
        let watcher = try hello(daemon, "f")
        #expect(try watcher.request(#"{"op":"sub","ch":"bulk","rid":0}"#)["ok"] as? String == "sub")
        let other = try hello(daemon, "f")
        let publisher = try hello(daemon, "s")
        let finished = LockedBox(false)
        let pings = pingWhile(other) { finished.value }
        let start = Date()
        let lines = (0..<1000).map { #"{"op":"pub","ch":"bulk","data":\#($0),"rid":\#($0)}"# + "\n" }.joined()
        publisher.send(bytes: Array(lines.utf8))
        var receipts: [Int] = []
        for _ in 0..<1000 {
            let frame = try publisher.frame(timeout: 30)
            #expect(frame["ok"] as? String == "pub", "\(frame)")
            if let rid = frame["rid"] as? Int { receipts.append(rid) }
        }
        let took = Date().timeIntervalSince(start)
        finished.mutate { $0 = true }
        #expect(receipts == Array(0..<1000), "every publish answered, in order")
        #expect(took >= 4.0, "1,000 publishes at 200/s (a burst of 20) took \(took) s")
        #expect(took < 12, "and not much more: \(took) s")
        var delivered: [Int] = []
        while delivered.count < 1000, let frame = try? watcher.frame(timeout: 5) {
            if let data = frame["data"] as? Int { delivered.append(data) }
        }
        #expect(delivered == Array(0..<1000), "nothing dropped")
        let times = pings().sorted()
        #expect(times.count > 100, "the other user was answered throughout (\(times.count) pings)")
        let p99 = times.isEmpty ? .infinity : times[min(times.count - 1, times.count * 99 / 100)]
        #expect(p99 < 50, "another user's ping p99 \(p99) ms")
        let metrics = try HTTPTestClient.request("GET", "/metrics", port: try daemon.monitorPort()).body
        let line = metrics.split(separator: "\n").first { $0.hasPrefix(#"herald_user_throttled_seconds_total{user="slow"}"#) }
        let seconds = line.flatMap { Double($0.split(separator: " ").last ?? "") } ?? 0
        #expect(seconds > 3 && seconds <= took + 0.5, "the paused time is counted once per second: \(String(describing: line))")
    }

    @Test func theUsersConnectionsShareOneBucketOfOps() throws {
        let daemon = try daemon("ops_per_s: 100")
        let clients = try (0..<4).map { _ in try hello(daemon, "s") }
        let start = Date()
        let lines = (0..<100).map { #"{"op":"ping","rid":\#($0)}"# + "\n" }.joined()
        for client in clients { client.send(bytes: Array(lines.utf8)) }
        for client in clients {
            for _ in 0..<100 { #expect(try client.frame(timeout: 30)["pong"] != nil) }
        }
        let took = Date().timeIntervalSince(start)
        #expect(took >= 3.5, "400 ops at 100/s over 4 connections took \(took) s")
    }

    @Test func bytesInPerSecondHoldsForLargeLinesWithoutRefusingThem() throws {
        let daemon = try daemon("bytes_in_per_s: 50000")
        let watcher = try hello(daemon, "f")
        #expect(try watcher.request(#"{"op":"sub","ch":"big","rid":0}"#)["ok"] as? String == "sub")
        let publisher = try hello(daemon, "s")
        let payload = String(repeating: "x", count: 10_000)
        let start = Date()
        let lines = (0..<20).map { #"{"op":"pub","ch":"big","data":"\#(payload)","rid":\#($0)}"# + "\n" }.joined()
        publisher.send(bytes: Array(lines.utf8))
        for _ in 0..<20 { #expect(try publisher.frame(timeout: 30)["ok"] as? String == "pub") }
        let took = Date().timeIntervalSince(start)
        #expect(took >= 3.0, "200 KB at 50 KB/s took \(took) s")
        var delivered = 0
        while delivered < 20, (try? watcher.frame(timeout: 5)) != nil { delivered += 1 }
        #expect(delivered == 20)
    }

    @Test func aRateMustBeAPositiveInteger() throws {
        for bad in ["pub_per_s: 0", #"ops_per_s: "fast""#, "bytes_in_per_s: -5"] {
            #expect(throws: ConfigError.self, "\(bad)") {
                try Config.decode(json5: Data(#"{ user_limits: { \#(bad) } }"#.utf8), source: "test.json5")
            }
        }
        let config = try Config.decode(json5: Data(#"{ user_limits: { pub_per_s: 5, bytes_in_per_s: 6, ops_per_s: 7 } }"#.utf8),
                                       source: "test.json5")
        #expect(config.userLimits.pubPerS == 5 && config.userLimits.bytesInPerS == 6 && config.userLimits.opsPerS == 7)
    }
}
