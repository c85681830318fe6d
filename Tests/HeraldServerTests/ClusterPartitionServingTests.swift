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

    /// Waits until `client` gets a receipt for a `pub` on `probe` (the node serves again).
    private func servesAgain(_ client: TestClient, within seconds: Double) -> Bool {
        let healed = Date().addingTimeInterval(seconds)
        while Date() < healed {
            if (try? client.request(#"{"op":"pub","ch":"probe","rid":3}"#))?["ok"] as? String == "pub" { return true }
            Thread.sleep(forTimeInterval: 0.2)
        }
        return false
    }

    /// A partition longer than `node_timeout_ms`: the node answers `unavailable` rather than
    /// hang; the others declare it down; when it heals the node finds its index reaped and
    /// starts a new incarnation (fail-stop, issue 31): its subscriber is told `node_reset`,
    /// and resubscribing with `since` gets every event, none twice, in order.
    @Test(.oneRedisOnly) func aPartitionedNodeAnswersUnavailableAndItsSubscribersAreToldAndRecover() throws {
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
        for n in 6...10 { publisher.send(#"{"op":"pub","ch":"talk","data":\#(n)}"#) }
        Thread.sleep(forTimeInterval: 1)

        proxy.resume()
        let (lines, closed) = subscriber.linesUntilClosed(timeout: 10)
        #expect(closed && lines.last?.contains(#""error":"node_reset""#) == true, "the subscriber is told: \(lines.suffix(2))")
        seen += lines.compactMap { line in
            guard line.contains(#""event":"talk""#), let data = line.data(using: .utf8),
                  let frame = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else { return nil }
            return frame["seq"] as? Int
        }
        let again = try cut.client()
        #expect(servesAgain(again, within: 15), "the new incarnation serves cluster ops")
        let last = seen.max() ?? 0
        #expect(try again.request(#"{"op":"sub","ch":"talk","sub":"t","since":\#(last)}"#)["ok"] as? String == "sub")
        for n in 11...20 { publisher.send(#"{"op":"pub","ch":"talk","data":\#(n)}"#) }
        seen += seqs(again, seconds: 2)
        #expect(seen == Array(1...20), "every event once, in order, the missed ones from history: \(seen)")
    }

    /// A partition past the timeout while a client holds a lock and an instance channel on
    /// the cut node (the chaos run's delayed and blackholed links): the reaper hands both to
    /// clients of the other node, so the cut node must not answer the holder's `unlock` or
    /// `remove` `ok` meanwhile; the holder learns with `node_reset` once the link is back.
    /// A client of the cut node that holds nothing is served as in any outage.
    @Test(.oneRedisOnly) func aPartitionedNodeNeverVouchesForLocksTheReaperReleased() throws {
        let redis = try TestRedis()
        let proxy = try StallingProxy(upstream: redis.port)
        let cut = try node(proxy.port, "cut")
        let other = try node(redis.port, "other")
        let holder = try cut.client()
        #expect(try holder.request(#"{"op":"lock","ch":"hall"}"#)["ok"] as? String == "lock")
        #expect(try holder.request(#"{"op":"declare","ch":"inst.p"}"#)["ok"] as? String == "declare")
        let bystander = try cut.client()
        proxy.stall()
        let rival = try other.client()
        let taken = Date().addingTimeInterval(8)
        var declared = false
        while Date() < taken && !declared {
            declared = (try rival.request(#"{"op":"declare","ch":"inst.p"}"#)["ok"] as? String) == "declare"
            if !declared { Thread.sleep(forTimeInterval: 0.2) }
        }
        #expect(declared, "the reaper released the cut node's channel")
        #expect(try bystander.request(#"{"op":"ping","rid":7}"#)["rid"] as? Int == 7, "a client holding nothing is served")
        holder.send(#"{"op":"unlock","ch":"hall"}"#)
        holder.send(#"{"op":"remove","ch":"inst.p"}"#)
        Thread.sleep(forTimeInterval: 0.5)
        proxy.resume()
        let (lines, closed) = holder.linesUntilClosed(timeout: 15)
        #expect(closed, "the holder is closed")
        #expect(!lines.contains { $0.contains(#""ok":"unlock""#) || $0.contains(#""ok":"remove""#) },
                "nothing the cluster released was vouched for: \(lines)")
        #expect(lines.last?.contains(#""error":"node_reset""#) == true, "told node_reset: \(lines.suffix(2))")
    }

    /// A partition shorter than `node_timeout_ms`: nobody declares the node down; when it
    /// heals, the events published meanwhile are read back from history, none twice.
    @Test(.oneRedisOnly) func aShortPartitionIsReadBackWithoutAReset() throws {
        let redis = try TestRedis()
        let proxy = try StallingProxy(upstream: redis.port)
        let config = { (port: Int, name: String) in
            try DaemonProcess(config: #"cluster: { redis: "redis://127.0.0.1:\#(port)", node: "\#(name)", node_timeout_ms: 4000 },"#,
                              arguments: ["--workers", "1"])
        }
        let cut = try config(proxy.port, "cut")
        let other = try config(redis.port, "other")
        let subscriber = try cut.client()
        #expect(try subscriber.request(#"{"op":"sub","ch":"talk","sub":"t"}"#)["ok"] as? String == "sub")
        let publisher = try other.client()
        for n in 1...5 { publisher.send(#"{"op":"pub","ch":"talk","data":\#(n)}"#) }
        var seen = seqs(subscriber, seconds: 1)
        #expect(seen == [1, 2, 3, 4, 5])
        proxy.stall()
        for n in 6...10 { publisher.send(#"{"op":"pub","ch":"talk","data":\#(n)}"#) }
        Thread.sleep(forTimeInterval: 0.8)
        proxy.resume()
        for n in 11...20 { publisher.send(#"{"op":"pub","ch":"talk","data":\#(n)}"#) }
        seen += seqs(subscriber, seconds: 3)
        #expect(seen == Array(1...20), "read back, none twice, in order, no reset: \(seen)")
    }

    /// A short partition that cost the node its subscription link (Redis closed it), during
    /// which more events were published than the history keeps: the read-back finds only the
    /// newest, and the subscriber is told which it will never get (`gap`, issue 31: no silent
    /// gap) before the next event.
    @Test(.oneRedisOnly) func aReadBackThatCannotFindTheMissedEventsSendsAGapFirst() throws {
        let redis = try TestRedis()
        let proxy = try StallingProxy(upstream: redis.port)
        let config = { (port: Int, name: String) in
            try DaemonProcess(config: #"history: 2, cluster: { redis: "redis://127.0.0.1:\#(port)", node: "\#(name)", node_timeout_ms: 4000 },"#,
                              arguments: ["--workers", "1"])
        }
        let cut = try config(proxy.port, "cut")
        let other = try config(redis.port, "other")
        let subscriber = try cut.client()
        #expect(try subscriber.request(#"{"op":"sub","ch":"talk","sub":"t"}"#)["ok"] as? String == "sub")
        let publisher = try other.client()
        for n in 1...2 { publisher.send(#"{"op":"pub","ch":"talk","data":\#(n)}"#) }
        #expect(seqs(subscriber, seconds: 1) == [1, 2])
        proxy.stall()
        _ = try redis.command("CLIENT", "KILL", "TYPE", "pubsub")
        // The other node lost its subscription link too: it serves again within a backoff.
        #expect(servesAgain(publisher, within: 5))
        // One at a time, each acknowledged: each is then its own run in the history, so
        // the trim keeps only the newest. Sent back to back, a loaded machine let the other
        // node publish all six in one script call, one run the trim keeps whole: the
        // read-back then rightly found every missed event and owed no gap.
        for n in 3...8 {
            #expect(try publisher.request(#"{"op":"pub","ch":"talk","data":\#(n),"rid":\#(n)}"#)["seq"] as? Int == n)
        }
        Thread.sleep(forTimeInterval: 0.8)
        proxy.resume()
        var frames: [[String: Any]] = []
        while let frame = try? subscriber.frame(timeout: 2) { frames.append(frame) }
        let gap = frames.firstIndex { $0["gap"] as? String == "talk" }
        let gapFrame = gap.map { frames[$0] } ?? [:]
        let to = gapFrame["to"] as? Int ?? 0
        #expect(gapFrame["sub"] as? String == "t" && gapFrame["from"] as? Int == 3 && to >= 3,
                "the events the history lost are named first: \(frames)")
        let after = frames.dropFirst((gap ?? frames.count) + 1).compactMap { $0["seq"] as? Int }
        #expect(to < 8 && after == Array((to + 1)...8), "then the ones it kept, none twice: \(frames)")
        #expect(frames.prefix(gap ?? 0).allSatisfy { $0["seq"] == nil }, "no event before the gap frame: \(frames)")
    }
}
