import Foundation
import Testing
@testable import HeraldBroker

/// Listings of locks across nodes, the broker's side (docs/cluster.md, "Locks"): `locks` and
/// a channel-wide `lock` wait for the other nodes' lists and answer with this node's first;
/// when the others cannot be asked, `locks` is `unavailable` but a `lock`, which took effect
/// here, is answered with this node's list.
@Suite struct ClusterLockModeTests {
    private func settled(_ harness: BrokerHarness, _ cluster: ClusterState) {
        cluster.takeInterest().forEach { harness.broker.interestSeen(upTo: $0.ticket) }
    }

    @Test func locksAnswersWithThisNodesListsThenTheOthers() {
        let (harness, cluster) = BrokerHarness.clustered(node: 2)
        let subscriber = harness.connect()
        harness.send(subscriber, #"{"op":"sub","ch":"d.1","sub":"s"}"#)
        settled(harness, cluster)
        let asker = harness.connect()
        harness.send(asker, #"{"op":"locks","ch":"d.1","rid":1}"#)
        #expect(harness.frames(asker).isEmpty, "waits for the other nodes")
        let call = cluster.takeCalls().first
        #expect(call?.script == .locksQuery && call?.arguments.first == [UInt8(ascii: "l")])
        let others = ClusterValue.array([.array([.bytes(Array("c9/x".utf8))]), .array([.bytes(Array("c9/y".utf8))]), .int(0)])
        _ = harness.broker.clusterCallAnswered(token: call?.token ?? 0, result: others)
        let answer = harness.frames(asker).first
        #expect(answer?["locked"] as? [String] == ["c9/x"])
        #expect(answer?["unlocked"] as? [String] == ["c\(subscriber.id)/s", "c9/y"], "\(String(describing: answer))")
        harness.send(asker, #"{"op":"locks","ch":"d.1","rid":2}"#)
        _ = harness.broker.clusterCallAnswered(token: cluster.takeCalls().first?.token ?? 0, result: .failure("gone"))
        #expect(harness.frames(asker).first?["error"] as? String == "unavailable")
    }

    @Test func aChannelWideLockThatCouldNotAskTheOthersListsThisNodesAndHolds() {
        let (harness, cluster) = BrokerHarness.clustered(node: 2)
        let subscriber = harness.connect()
        harness.send(subscriber, #"{"op":"sub","ch":"d.*","sub":"s"}"#)
        settled(harness, cluster)
        _ = harness.frames(subscriber)
        let locker = harness.connect()
        harness.send(locker, #"{"op":"lock","ch":"d.>","rid":1}"#)
        let call = cluster.takeCalls().first
        #expect(call?.script == .locksQuery && call?.arguments.first == [UInt8(ascii: "o")])
        settled(harness, cluster)
        _ = harness.broker.clusterCallAnswered(token: call?.token ?? 0, result: .failure("gone"))
        let answer = harness.frames(locker).first
        #expect(answer?["ok"] as? String == "lock" && answer?["subs"] as? [String] == ["c\(subscriber.id)/s"],
                "\(String(describing: answer))")
        harness.broker.deliverRemote(channel: Array("d.1".utf8), seq: 1, from: 9, data: nil)
        #expect(harness.frames(subscriber).isEmpty, "the lock holds here")
    }
}
