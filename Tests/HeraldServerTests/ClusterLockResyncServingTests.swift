import Foundation
import HeraldTestSupport
import Testing

/// The lock resync after an outage against a real Redis (issue 30; `LockResync`,
/// `MirrorResyncTests` for the rule on a model), and where issue 31's lease rule overrides
/// it: a node whose liveness key lapsed while Redis was away is left out of the exact lock
/// snapshot another node reads when Redis is back. Issue 30 had the lapsed node announce its
/// locks again; since issue 31 a node whose liveness deadline passed unconfirmed tells its
/// lock holders `node_reset` and closes them before anything else (it cannot tell a Redis
/// outage from being cut off alone, when the reaper hands its locks on), so the lock is
/// released everywhere and nobody holds it unknowingly.
@Suite(.enabled(if: TestRedis.isAvailable, "needs Debian's redis-server"), .serialized)
struct ClusterLockResyncServingTests {
    private func ok(_ client: TestClient, _ line: String, _ op: String) throws { try ClusterTestNodes.ok(client, line, op) }

    /// Publishes until the node answers (it is ready again). - Returns: whether it did.
    private func served(_ client: TestClient) throws -> Bool {
        for attempt in 0..<300 {
            if try client.request(#"{"op":"pub","ch":"probe","rid":"p\#(attempt)"}"#)["ok"] != nil { return true }
            usleep(50_000)
        }
        return false
    }

    /// The next event's channel and data.
    private func event(_ client: TestClient) throws -> (String, Int) {
        let frame = try client.frame()
        return (frame["event"] as? String ?? "\(frame)", frame["data"] as? Int ?? -1)
    }

    @Test func aNodeFrozenThroughAnOutagePastItsDeadlineTellsItsLockHolderAndReleasesTheLock() throws {
        let redis = try TestRedis()
        let lapsed = try ClusterTestNodes.node(redis, "a", timeoutMs: 2_000)
        let reader = try ClusterTestNodes.node(redis, "b", timeoutMs: 2_000)
        let (locker, _) = try ClusterTestNodes.client(lapsed)
        let (probe, _) = try ClusterTestNodes.client(lapsed)
        let (subscriber, _) = try ClusterTestNodes.client(reader)
        let (publisher, _) = try ClusterTestNodes.client(reader)
        try ok(subscriber, #"{"op":"sub","ch":"cars.*","sub":"all"}"#, "sub")
        try ok(locker, #"{"op":"lock","ch":"cars.1"}"#, "lock")
        publisher.send(#"{"op":"pub","ch":"cars.1","data":1}"#)
        publisher.send(#"{"op":"pub","ch":"cars.2","data":2}"#)
        #expect(try event(subscriber) == ("cars.2", 2), "the lock holds before the outage")

        // The lapsed node is frozen through the outage and past its liveness key's 2 s.
        lapsed.signal(SIGSTOP)
        redis.stop()
        usleep(2_500_000)
        try redis.restart()
        #expect(try served(publisher), "the reader is ready again, its snapshot read without the frozen node")
        lapsed.signal(SIGCONT)
        let (lines, closed) = locker.linesUntilClosed(timeout: 10)
        #expect(closed && lines.last?.contains(#""error":"node_reset""#) == true, "the holder is told: \(lines.suffix(2))")
        #expect(try served(probe), "the lapsed node is ready again")

        publisher.send(#"{"op":"pub","ch":"cars.1","data":3}"#)
        publisher.send(#"{"op":"pub","ch":"cars.2","data":4}"#)
        #expect(try event(subscriber) == ("cars.1", 3), "the told holder's lock is released on the reader too")
        #expect(try event(subscriber) == ("cars.2", 4))
    }
}
