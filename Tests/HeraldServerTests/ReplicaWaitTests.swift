import HeraldBroker
import Testing
@testable import HeraldServer

/// `ReplicaWait` (`cluster.wait_replicas`): which writes of a `WAIT` batch are answered as
/// Redis answered them and which become "not confirmed", and reading Sentinel's replies.
struct ReplicaWaitTests {
    private let done = RedisReply.array([.integer(0), .integer(7), .integer(3)])
    private let refused = RedisReply.array([.integer(1), .string(Array("conflict".utf8)), .string(Array("no".utf8)), .integer(6)])

    private func batch() -> ReplicaWait {
        let wait = ReplicaWait()
        let first = wait.add(ClusterState.ScriptCall(unwaited: .state, arguments: []))
        let second = wait.add(ClusterState.ScriptCall(unwaited: .state, arguments: []))
        wait.replied(first, done)
        wait.replied(second, refused)
        return wait
    }

    @Test func enoughReplicasKeepEveryAnswer() {
        let outcomes = batch().outcomes(confirmed: 2, needed: 1, timeoutMs: 1_000).map(\.1)
        #expect(outcomes == [done, refused])
    }

    @Test func tooFewReplicasTurnDoneWritesIntoMayOrMayNotHaveBeenApplied() {
        let outcomes = batch().outcomes(confirmed: 0, needed: 1, timeoutMs: 500).map(\.1)
        #expect(outcomes[0] == .error("write not confirmed (0 of 1 replicas confirmed it within 500 ms): it may or may not have been applied"))
        #expect(outcomes[1] == refused, "a refused write was not applied and keeps its error")
    }

    @Test func aLostConnectionBeforeWaitAnsweredIsNotConfirmedEither() {
        let wait = batch()
        _ = wait.add(ClusterState.ScriptCall(unwaited: .state, arguments: []))
        let outcomes = wait.outcomes(confirmed: nil, needed: 1, timeoutMs: 500).map(\.1)
        #expect(outcomes[0].failure?.contains("the connection to Redis went before replicas confirmed it") == true)
        #expect(outcomes[2] == .disconnected, "a call with no reply is answered as a lost connection")
    }

    /// A publish batch waits with the state calls of its pass and is finished in the order
    /// sent, with its script reply and, when replicas did not confirm, why; a batch whose
    /// script failed keeps its own failure.
    @Test func publishBatchesAreFinishedInOrderWithWhyTheyWereNotConfirmed() {
        for confirmed in [0, 1] {
            var order: [String] = []
            var unconfirmedReasons: [String?] = []
            let wait = ReplicaWait()
            let call = wait.add(ClusterState.ScriptCall(unwaited: .state, arguments: []))
            let published = wait.add(.publish { reply, unconfirmed in
                order.append("publish \(reply.elements?.count ?? -1)")
                unconfirmedReasons.append(unconfirmed)
            })
            let failed = wait.add(.publish { reply, unconfirmed in
                order.append("failed \(reply.failure ?? "")")
                unconfirmedReasons.append(unconfirmed)
            })
            wait.replied(call, done)
            wait.replied(published, .array([.integer(9), .integer(1)]))
            wait.replied(failed, .error("NOSCRIPT"))
            wait.settle(confirmed: confirmed, needed: 1, timeoutMs: 200) { _, reply in order.append("call \(reply.failure == nil)") }
            #expect(order == ["call \(confirmed == 1)", "publish 2", "failed NOSCRIPT"])
            if confirmed == 1 {
                #expect(unconfirmedReasons == [nil, nil])
            } else {
                #expect(unconfirmedReasons == ["write not confirmed (0 of 1 replicas confirmed it within 200 ms): it may or may not have been applied", nil])
            }
        }
    }

    @Test func sentinelRepliesAreRead() {
        let named = RedisReply.array([.string(Array("10.0.0.5".utf8)), .string(Array("6380".utf8))])
        #expect(SentinelLookup.primaryAddress(in: named) == RedisAddress(host: "10.0.0.5", port: 6380))
        #expect(SentinelLookup.primaryAddress(in: .null) == nil)
        #expect(SentinelLookup.primaryAddress(in: .array([.string(Array("h".utf8)), .string(Array("0".utf8))])) == nil)
        #expect(SentinelLookup.isPrimary(.array([.string(Array("master".utf8)), .integer(1), .array([])])))
        #expect(!SentinelLookup.isPrimary(.array([.string(Array("slave".utf8))])))
        #expect(RedisAddress(host: "::1", port: 26379).description == "[::1]:26379")
    }
}
