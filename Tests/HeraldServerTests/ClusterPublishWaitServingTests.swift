import Foundation
import HeraldTestSupport
import Testing

/// `wait_replicas` holds an acknowledged `pub` (one with `rid`) behind the pass's `WAIT`, as
/// it holds a retained-state write (docs/cluster.md, "Known gap"): an acknowledgement means
/// the replicas had the event's `seq`. A primary with no replica never confirms: the event is
/// still delivered, but its publisher hears `unavailable`, "may or may not have been
/// applied"; a `pub` without `rid` is not held at all. With a synced replica both are
/// acknowledged as before.
@Suite(.enabled(if: TestRedis.isAvailable, "needs Debian's redis-server"), .serialized)
struct ClusterPublishWaitServingTests {
    /// A node with `wait_replicas` and `wait_timeout_ms` as given (a short timeout where no
    /// replica can confirm, a long one where a loaded machine must not turn a slow
    /// confirmation into a refusal).
    private func node(_ redis: TestRedis, waitReplicas: Int, timeoutMs: Int) throws -> DaemonProcess {
        try DaemonProcess(config: #"cluster: { redis: "redis://127.0.0.1:\#(redis.port)", node: "n0", wait_replicas: \#(waitReplicas), wait_timeout_ms: \#(timeoutMs) },"#,
                          arguments: ["--workers", "1"])
    }


    @Test func anAcknowledgedPubNoReplicaConfirmedIsAnsweredUnavailableButDelivered() throws {
        let redis = try TestRedis()
        let daemon = try node(redis, waitReplicas: 1, timeoutMs: 200)
        let watcher = try daemon.client()
        #expect(try watcher.request(#"{"op":"sub","ch":"orders","rid":0}"#)["ok"] as? String == "sub")
        let publisher = try daemon.client()
        let answer = try publisher.request(#"{"op":"pub","ch":"orders","data":1,"rid":1}"#)
        #expect(answer["error"] as? String == "unavailable", "\(answer)")
        #expect((answer["message"] as? String)?.contains("write not confirmed (0 of 1 replicas confirmed it within 200 ms)") == true,
                "\(answer)")
        #expect(answer["rid"] as? Int == 1)
        publisher.send(#"{"op":"pub","ch":"orders","data":2}"#)
        let ping = try publisher.request(#"{"op":"ping","rid":2}"#)
        #expect(ping["pong"] != nil, "a pub without rid has no answer, held or not: \(ping)")
        #expect(watcher.eventData(quietFor: 0.7) == [1, 2], "both events were published")
    }

    @Test func aSyncedReplicaConfirmsAcknowledgedPubsInOrder() throws {
        let redis = try TestRedis()
        let replica = try TestRedis(extraArguments: ["--replicaof", "127.0.0.1", String(redis.port)])
        try SentinelRig.waitFor("the replica to sync", seconds: 15) { SentinelRig.isSyncedReplica(replica.port, of: redis.port) }
        let daemon = try node(redis, waitReplicas: 1, timeoutMs: 10_000)
        let watcher = try daemon.client()
        #expect(try watcher.request(#"{"op":"sub","ch":"orders","rid":0}"#)["ok"] as? String == "sub")
        let publisher = try daemon.client()
        for n in 1...5 { publisher.send(#"{"op":"pub","ch":"orders","data":\#(n),"rid":\#(n)}"#) }
        let answers = try (1...5).map { _ in try publisher.frame(timeout: 15) }
        #expect(answers.map { $0["rid"] as? Int } == [1, 2, 3, 4, 5], "answered in the order sent: \(answers)")
        #expect(answers.map { $0["seq"] as? Int } == [1, 2, 3, 4, 5], "\(answers)")
        #expect(watcher.eventData(quietFor: 0.7) == [1, 2, 3, 4, 5])
    }
}
