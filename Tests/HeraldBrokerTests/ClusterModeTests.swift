import Foundation
import Testing
@testable import HeraldBroker

/// The broker's side of cluster mode (docs/cluster.md), with the test playing the engine:
/// taking the outbox, answering receipts, delivering events "from Redis", acknowledging
/// interest.
@Suite struct ClusterModeTests {
    private func clustered() -> (BrokerHarness, ClusterState) {
        let harness = BrokerHarness()
        let cluster = ClusterState(nodeIndex: 3)
        harness.broker.cluster = cluster
        return (harness, cluster)
    }

    @Test func aPubIsQueuedForRedisAndNotDeliveredLocallyUntilRedisSendsItBack() {
        let (harness, cluster) = clustered()
        let subscriber = harness.connect()
        harness.subscribe(subscriber, #""ch":"cars.1","sub":"s""#)
        cluster.takeInterest().forEach { harness.broker.interestSeen(upTo: $0.ticket) }
        _ = harness.frames(subscriber)
        let publisher = harness.connect()
        harness.send(publisher, #"{"op":"pub","ch":"cars.1","data":{"x":1},"rid":7}"#)
        #expect(harness.frames(subscriber).isEmpty, "the seq comes from Redis first")
        #expect(harness.frames(publisher).isEmpty, "the receipt too")
        // `$sys.client.connected` of each connection goes to Redis too (docs/cluster.md).
        let events = cluster.takeOutbox().filter { $0.channel.first != UInt8(ascii: "$") }
        #expect(events.count == 1)
        #expect(events.first?.channel == Array("cars.1".utf8))
        #expect(events.first?.data == Array(#"{"x":1}"#.utf8))
        #expect(events.first?.from == publisher.id)
        let receipt = events.first?.receipt ?? 0
        #expect(receipt > 0)
        harness.broker.clusterPublished(receipt: receipt, seq: 41, nodes: 2)
        let answer = harness.frames(publisher)
        #expect(answer.first?["ok"] as? String == "pub" && answer.first?["seq"] as? Int == 41)
        #expect(answer.first?["rid"] as? Int == 7 && answer.first?["receivers"] as? Int == 2)
        let delivered = Array(#"{"x":1}"#.utf8).withUnsafeBytes {
            harness.broker.deliverRemote(channel: Array("cars.1".utf8), seq: 41, from: publisher.id, data: $0)
        }
        #expect(delivered == 1)
        let event = harness.frames(subscriber)
        #expect(event.first?["event"] as? String == "cars.1" && event.first?["seq"] as? Int == 41)
        #expect(event.first?["from"] as? String == "c\(publisher.id)")
        #expect((event.first?["data"] as? [String: Any])?["x"] as? Int == 1)
    }

    @Test func eventsFromOtherNodesReachWildcardsAndRespectEchoFalse() {
        let (harness, cluster) = clustered()
        let quiet = harness.connect(echo: false)
        harness.subscribe(quiet, #""ch":"a.*","sub":"w""#)
        cluster.takeInterest().forEach { harness.broker.interestSeen(upTo: $0.ticket) }
        _ = harness.frames(quiet)
        let remote = (7 << 32) | 5
        #expect(harness.broker.deliverRemote(channel: Array("a.b".utf8), seq: 1, from: remote, data: nil) == 1)
        #expect(harness.frames(quiet).first?["from"] as? String == "c\(remote)")
        #expect(harness.broker.deliverRemote(channel: Array("a.b".utf8), seq: 2, from: quiet.id, data: nil) == 0,
                "its own event, back from Redis, is not echoed")
        #expect(harness.broker.deliverRemote(channel: Array("b.c".utf8), seq: 1, from: remote, data: nil) == 0)
    }

    @Test func aPatternsFirstSubscriberWaitsForEveryNodeAndLaterOnesDoNot() {
        let (harness, cluster) = clustered()
        let first = harness.connect()
        harness.send(first, #"{"op":"sub","ch":"x.>","sub":"one","rid":1}"#)
        #expect(harness.frames(first).isEmpty, "held until every node has seen the interest")
        let changes = cluster.takeInterest()
        #expect(changes == [ClusterState.InterestChange(pattern: Array("x.>".utf8), added: true, ticket: 1)])
        let second = harness.connect()
        #expect(harness.subscribe(second, #""ch":"x.>","sub":"two""#)["ok"] as? String == "sub",
                "the node already has this interest")
        #expect(cluster.takeInterest().isEmpty)
        harness.broker.interestSeen(upTo: 1)
        #expect(harness.frames(first).first?["ok"] as? String == "sub")
        harness.send(first, #"{"op":"unsub","sub":"one"}"#)
        #expect(cluster.takeInterest().isEmpty, "another subscriber still holds the pattern")
        harness.send(second, #"{"op":"unsub","sub":"two"}"#)
        #expect(cluster.takeInterest() == [ClusterState.InterestChange(pattern: Array("x.>".utf8), added: false, ticket: 0)])
    }

    @Test func receiptsOfAPublishThatFailedAreUnavailable() {
        let (harness, cluster) = clustered()
        let publisher = harness.connect()
        harness.send(publisher, #"{"op":"pub","ch":"k","rid":"r1"}"#)
        let receipt = cluster.takeOutbox().first { $0.receipt != 0 }?.receipt ?? 0
        harness.broker.clusterPublishFailed(receipt: receipt, reason: "connection to Redis lost")
        let answer = harness.frames(publisher).first
        #expect(answer?["error"] as? String == "unavailable" && answer?["rid"] as? String == "r1")
    }
}

@Suite struct ClusterCatchUpTests {
    @Test func sinceInClusterModeSaysNotRecoveredUntilHistoryIsReadFromRedis() {
        let harness = BrokerHarness()
        let cluster = ClusterState(nodeIndex: 1)
        harness.broker.cluster = cluster
        let client = harness.connect()
        harness.subscribe(client, #""ch":"h.1","sub":"a""#)
        cluster.takeInterest().forEach { harness.broker.interestSeen(upTo: $0.ticket) }
        _ = harness.frames(client)
        harness.broker.deliverRemote(channel: Array("h.1".utf8), seq: 5, from: 9, data: nil)
        _ = harness.frames(client)
        let answer = harness.request(client, #"{"op":"sub","ch":"h.1","sub":"b","since":5}"#)
        #expect(answer["recovered"] as? Bool == false, "this node cannot know what was published elsewhere: \(answer)")
    }
}
