import Foundation
import HeraldTestSupport
import Testing

/// A partition between one node and Redis (issue 15): a proxy between them stops forwarding
/// while every connection stays up. The node must answer cluster-wide ops `unavailable`
/// rather than hang, and after the partition heals serve again without delivering any
/// event twice or out of order, the events published meanwhile read back from history.
@Suite(.enabled(if: TestRedis.isAvailable, "needs Debian's redis-server"), .serialized)
struct ClusterPartitionServingTests {
    private static let timeoutMs = 1_000

    private func node(_ redisPort: Int, _ name: String) throws -> DaemonProcess {
        try DaemonProcess(config: #"cluster: { redis: "redis://127.0.0.1:\#(redisPort)", node: "\#(name)", node_timeout_ms: \#(Self.timeoutMs) },"#,
                          arguments: ["--workers", "1"])
    }

    /// The `seq`s of the `talk` events that arrive within `seconds`.
    private func seqs(_ client: TestClient, seconds: Double) -> [Int] {
        var seen: [Int] = []
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline, let frame = try? client.frame(timeout: 0.3) {
            if frame["event"] as? String == "talk", let seq = frame["seq"] as? Int { seen.append(seq) }
        }
        return seen
    }

    @Test func aPartitionedNodeAnswersUnavailableAndNeverRepeatsOrReordersAfterItHeals() throws {
        let redis = try TestRedis()
        let proxy = try StallingProxy(upstream: redis.port)
        let cut = try node(proxy.port, "cut")
        let other = try node(redis.port, "other")
        let subscriber = try cut.client()
        #expect(try subscriber.request(#"{"op":"sub","ch":"talk","sub":"t"}"#)["ok"] as? String == "sub")
        let publisher = try other.client()
        for n in 1...5 { publisher.send(#"{"op":"pub","ch":"talk","data":\#(n)}"#) }
        var seen = seqs(subscriber, seconds: 1)
        #expect(seen == [1, 2, 3, 4, 5])

        proxy.stall()
        let writer = try cut.client()
        let started = Date()
        writer.send(#"{"op":"set","ch":"k","value":1,"rid":1}"#)
        let refused = try writer.frame(timeout: Double(Self.timeoutMs) / 1000 + 5)
        #expect(refused["error"] as? String == "unavailable" && refused["rid"] as? Int == 1, "\(refused)")
        #expect(Date().timeIntervalSince(started) < Double(Self.timeoutMs) / 1000 + 4, "answered, not hung")
        let receipt = try writer.request(#"{"op":"pub","ch":"talk","data":0,"rid":2}"#)
        #expect(receipt["error"] as? String == "unavailable", "\(receipt)")
        for n in 6...10 { publisher.send(#"{"op":"pub","ch":"talk","data":\#(n)}"#) }
        seen += seqs(subscriber, seconds: 0.5)

        proxy.resume()
        let healed = Date().addingTimeInterval(15)
        var served = false
        while !served && Date() < healed {
            served = (try? writer.request(#"{"op":"pub","ch":"probe","rid":3}"#))?["ok"] as? String == "pub"
            if !served { Thread.sleep(forTimeInterval: 0.2) }
        }
        #expect(served, "the node serves cluster ops again once Redis answers")
        for n in 11...20 { publisher.send(#"{"op":"pub","ch":"talk","data":\#(n)}"#) }
        seen += seqs(subscriber, seconds: 2)
        #expect(seen == seen.sorted() && Set(seen).count == seen.count, "no event twice or out of order: \(seen)")
        #expect(seen.filter { $0 > 10 }.count == 10, "all ten after healing: \(seen)")
        #expect(seen == Array(1...20), "the five published during the partition are read back from history: \(seen)")
    }
}
