import Foundation
import HeraldTestSupport
import Testing

/// Idempotent publish in cluster mode (issue 37, item 4; docs/cluster.md, "Idempotent
/// publish"): the id is remembered inside the publish script of the channel's shard, so a
/// retry through another node is not delivered twice, and its receipt is the first one's.
@Suite(.enabled(if: TestRedis.isAvailable, "needs Debian's redis-server"), .serialized)
struct ClusterDedupServingTests {
    private func cluster(_ redis: TestRedis, nodes: Int = 3, extra: String = "") throws -> [DaemonProcess] {
        try (0..<nodes).map { index in
            try DaemonProcess(config: #"cluster: { redis: "redis://127.0.0.1:\#(redis.port)", node: "n\#(index)" }, \#(extra)"#,
                              arguments: ["--workers", "1"])
        }
    }

    /// Runs `body`; when it throws, records every node's log with the error.
    private func withLogs(of nodes: [DaemonProcess], _ body: () throws -> Void) throws {
        do {
            try body()
        } catch {
            Issue.record("\(error); node logs:\n\(nodes.map { $0.log.joined(separator: "\n") }.joined(separator: "\n--\n"))")
            throw error
        }
    }

    private func subscriber(_ daemon: DaemonProcess, _ pattern: String) throws -> TestClient {
        let client = try daemon.client()
        #expect(try client.request(#"{"op":"sub","ch":"\#(pattern)","rid":0}"#)["ok"] as? String == "sub")
        return client
    }


    @Test func aRetryThroughAnotherNodeIsDeliveredOnceWithTheFirstReceipt() throws {
        let redis = try TestRedis()
        let nodes = try cluster(redis)
        try withLogs(of: nodes) {
            let watcher = try subscriber(nodes[2], "orders.*")
            let first = try nodes[0].client()
            let second = try nodes[1].client()
            let sent = try first.request(#"{"op":"pub","ch":"orders.1","id":"o-17","data":1,"rid":1}"#)
            #expect(sent["seq"] as? Int == 1 && sent["receivers"] as? Int == 1 && sent["duplicate"] == nil, "\(sent)")
            let again = try second.request(#"{"op":"pub","ch":"orders.1","id":"o-17","data":2,"rid":2}"#)
            #expect(again["seq"] as? Int == 1 && again["receivers"] as? Int == 1 && again["duplicate"] as? Bool == true,
                    "\(again)")
            // In one batch: plain events around ids, the same id twice, and on another channel.
            first.send(#"{"op":"pub","ch":"orders.1","data":3}"#)
            first.send(#"{"op":"pub","ch":"orders.1","id":"o-18","data":4}"#)
            first.send(#"{"op":"pub","ch":"orders.1","id":"o-18","data":5}"#)
            first.send(#"{"op":"pub","ch":"orders.2","id":"o-17","data":6}"#)
            first.send(#"{"op":"pub","ch":"orders.1","data":7}"#)
            let receipt = try first.request(#"{"op":"pub","ch":"orders.1","id":"o-17","data":8,"rid":3}"#)
            #expect(receipt["duplicate"] as? Bool == true && receipt["seq"] as? Int == 1, "\(receipt)")
            // Across shards two channels keep no order between them: each its own.
            let seen = watcher.eventData(quietFor: 0.7)
            #expect(seen.sorted() == [1, 3, 4, 6, 7], "each id once per channel, plain events untouched: \(seen)")
            #expect(seen.filter { $0 != 6 } == [1, 3, 4, 7], "orders.1 in publish order: \(seen)")
            let after = try second.request(#"{"op":"pub","ch":"orders.1","data":9,"rid":4}"#)
            #expect(after["seq"] as? Int == 5, "duplicates took no seq: \(after)")
        }
    }

    @Test func aBadIdIsRefusedOnANodeAsOnOne() throws {
        let redis = try TestRedis()
        let nodes = try cluster(redis, nodes: 1)
        let client = try nodes[0].client()
        for bad in [#""""#, "7", #""\#(String(repeating: "i", count: 65))""#] {
            let answer = try client.request(#"{"op":"pub","ch":"x","id":\#(bad),"rid":1}"#)
            #expect(answer["error"] as? String == "bad_field", "id \(bad): \(answer)")
        }
        // Ids with the bytes the script's own framing uses are ids like any other.
        for (n, id) in ["a:b", "~1:x", "!|,", "é\\u0000z"].enumerated() {
            let answer = try client.request(#"{"op":"pub","ch":"x","id":"\#(id)","data":\#(n),"rid":\#(n)}"#)
            #expect(answer["ok"] as? String == "pub" && answer["duplicate"] == nil, "id \(id): \(answer)")
            let again = try client.request(#"{"op":"pub","ch":"x","id":"\#(id)","data":\#(n),"rid":\#(n)}"#)
            #expect(again["duplicate"] as? Bool == true && again["seq"] as? Int == answer["seq"] as? Int, "id \(id): \(again)")
        }
    }

    /// The cap is per shard (a share of `max_dedup_ids`): with one Redis, exactly 2.
    @Test(.oneRedisOnly) func anIdIsForgottenWhenItsWindowEndsAndPastTheCap() throws {
        let redis = try TestRedis()
        let nodes = try cluster(redis, nodes: 2, extra: "dedup_window_ms: 400, max_dedup_ids: 2,")
        try withLogs(of: nodes) {
            let watcher = try subscriber(nodes[1], "x")
            let publisher = try nodes[0].client()
            publisher.send(#"{"op":"pub","ch":"x","id":"a","data":1}"#)
            publisher.send(#"{"op":"pub","ch":"x","id":"a","data":2}"#)
            #expect(watcher.eventData(quietFor: 0.3) == [1])
            Thread.sleep(forTimeInterval: 0.5)
            publisher.send(#"{"op":"pub","ch":"x","id":"a","data":3}"#)
            #expect(watcher.eventData(quietFor: 0.3) == [3], "the window ended")
            publisher.send(#"{"op":"pub","ch":"x","id":"b","data":4}"#)
            publisher.send(#"{"op":"pub","ch":"x","id":"c","data":5}"#)
            publisher.send(#"{"op":"pub","ch":"x","id":"a","data":6}"#)
            publisher.send(#"{"op":"pub","ch":"x","id":"c","data":7}"#)
            #expect(watcher.eventData(quietFor: 0.3) == [4, 5, 6], "past 2 ids the oldest (a) went first; c is still known")
            #expect(Int(try redis.command("LLEN", "herald:dq")) ?? 99 <= 2, "the id list stays within the cap")
        }
    }
}
