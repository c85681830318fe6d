import Foundation
import Testing
@testable import HeraldBroker

/// Queue groups on the broker's side of cluster mode (docs/cluster.md, "Queue groups"), the
/// test playing the engine: what a node tells about its groups, and how it delivers an
/// event the publish script routed to it.
@Suite struct ClusterGroupModeTests {
    private func clustered() -> (BrokerHarness, ClusterState) { BrokerHarness.clustered(node: 2) }

    private func seeAll(_ harness: BrokerHarness, _ cluster: ClusterState) -> [ClusterState.InterestChange] {
        let changes = cluster.takeInterest()
        changes.forEach { harness.broker.interestSeen(upTo: $0.ticket) }
        return changes
    }

    @Test func aGroupsFirstMemberWaitsForEveryNodeAndLaterCountsAreNotBarriers() {
        let (harness, cluster) = clustered()
        let first = harness.connect()
        harness.send(first, #"{"op":"sub","ch":"jobs.*","group":"w","sub":"a","rid":1}"#)
        #expect(harness.frames(first).isEmpty, "held until every node routes to the group here")
        let joined = cluster.takeInterest()
        #expect(joined.count == 1)
        #expect(joined.first?.group == Array("w".utf8) && joined.first?.members == 1 && (joined.first?.ticket ?? 0) > 0)
        #expect(joined.first?.pattern == Array("jobs.*".utf8))
        harness.broker.interestSeen(upTo: joined.first?.ticket ?? 0)
        #expect(harness.frames(first).first?["ok"] as? String == "sub")
        let second = harness.connect()
        #expect(harness.subscribe(second, #""ch":"jobs.*","group":"w","sub":"b""#)["ok"] as? String == "sub")
        let counted = cluster.takeInterest()
        #expect(counted.map(\.members) == [2] && counted.first?.ticket == 0, "a count, no barrier")
    }

    @Test func plainInterestIsOnlyForSubscribersOutsideGroups() {
        let (harness, cluster) = clustered()
        let member = harness.connect()
        harness.subscribe(member, #""ch":"a.b","group":"g""#)
        #expect(seeAll(harness, cluster).allSatisfy { $0.group != nil }, "a group member alone is no plain interest")
        let plain = harness.connect()
        harness.subscribe(plain, #""ch":"a.b","sub":"p""#)
        let added = seeAll(harness, cluster)
        #expect(added.count == 1 && added.first?.group == nil && added.first?.added == true)
        harness.send(plain, #"{"op":"unsub","sub":"p"}"#)
        let removed = cluster.takeInterest()
        #expect(removed.count == 1 && removed.first?.group == nil && removed.first?.added == false)
        #expect(harness.broker.localInterestPatterns().isEmpty, "only groups are left here")
        #expect(harness.broker.localGroupMemberships().map(\.members) == [1])
    }

    @Test func membersLeavingInOnePassAreOneCountChange() {
        let (harness, cluster) = clustered()
        let holder = harness.connect()
        for n in 0..<50 { harness.subscribe(holder, #""ch":"x","group":"g","sub":"m\#(n)""#) }
        _ = seeAll(harness, cluster)
        harness.send(holder, #"{"op":"unsub","all":true}"#)
        let changes = cluster.takeInterest()
        #expect(changes.count == 1, "coalesced: \(changes.map(\.members))")
        #expect(changes.first?.added == false && changes.first?.members == 0)
    }

    @Test func anEventRoutedForAGroupGoesToOneLocalMemberRoundRobinAndNotToPlainSubscribers() {
        let (harness, cluster) = clustered()
        let members = [harness.connect(), harness.connect()]
        for member in members { harness.subscribe(member, #""ch":"q.*","group":"g""#) }
        let plain = harness.connect()
        harness.subscribe(plain, #""ch":"q.1""#)
        _ = seeAll(harness, cluster)
        members.forEach { _ = harness.frames($0) }
        _ = harness.frames(plain)
        let groupOnly = ClusterRouting(plain: false, groups: [Array("q.* g".utf8)])
        for seq in 1...4 {
            #expect(harness.broker.deliverRemote(RemoteEvent(seq: seq, from: 99, channel: Array("q.1".utf8), data: nil), routing: groupOnly, now: 0) == 1)
        }
        #expect(members.map { harness.frames($0).compactMap { $0["seq"] as? Int } } == [[1, 3], [2, 4]])
        #expect(harness.frames(plain).isEmpty, "routed for the group only")
        #expect(harness.broker.deliverRemote(channel: Array("q.1".utf8), seq: 5, from: 99, data: nil) == 1,
                "a plain routing reaches the plain subscriber and no group member")
        #expect(harness.frames(plain).count == 1 && members.allSatisfy { harness.frames($0).isEmpty })
        let foreign = ClusterRouting(plain: false, groups: [Array("other.* g".utf8), Array("q.* nope".utf8), Array("bad".utf8)])
        #expect(harness.broker.deliverRemote(RemoteEvent(seq: 6, from: 99, channel: Array("q.1".utf8), data: nil), routing: foreign, now: 0) == 0,
                "a group whose pattern does not match, or that is not here, gets nothing")
    }
}
