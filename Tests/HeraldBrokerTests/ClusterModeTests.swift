import Foundation
import Testing
@testable import HeraldBroker

/// The broker's side of cluster mode (docs/cluster.md), with the test playing the engine:
/// taking the outbox, answering receipts, delivering events "from Redis", acknowledging
/// interest.
@Suite struct ClusterModeTests {
    private func clustered() -> (BrokerHarness, ClusterState) { BrokerHarness.clustered(node: 3) }

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

    /// A second subscriber that comes while the pattern's registration is still on its way
    /// waits for it too (chaos, issue 33: its first event went with `receivers: 0`); once
    /// every node has seen it, later subscribers are answered at once.
    @Test func aPatternsSubscribersWaitForItsRegistrationAndLaterOnesDoNot() {
        let (harness, cluster) = clustered()
        let first = harness.connect()
        harness.send(first, #"{"op":"sub","ch":"x.>","sub":"one","rid":1}"#)
        #expect(harness.frames(first).isEmpty, "held until every node has seen the interest")
        let changes = cluster.takeInterest()
        #expect(changes == [ClusterState.InterestChange(pattern: Array("x.>".utf8), added: true, ticket: 1)])
        let second = harness.connect()
        harness.send(second, #"{"op":"sub","ch":"x.>","sub":"two","rid":2}"#)
        #expect(harness.frames(second).isEmpty, "the registration is still on its way: held too")
        #expect(cluster.takeInterest().isEmpty, "no second registration")
        harness.broker.interestSeen(upTo: 1)
        #expect(harness.frames(first).first?["ok"] as? String == "sub")
        #expect(harness.frames(second).first?["ok"] as? String == "sub")
        let third = harness.connect()
        #expect(harness.subscribe(third, #""ch":"x.>","sub":"three""#)["ok"] as? String == "sub",
                "the node already has this interest, seen by every node")
        harness.send(third, #"{"op":"unsub","sub":"three"}"#)
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

    /// `printf '{"op":"pub",…,"rid":1}\n' | nc -q1 …` must print the receipt.
    @Test func aHalfClosedPublisherStaysOpenUntilItsReceiptIsWritten() {
        let (harness, cluster) = clustered()
        let publisher = harness.connect()
        harness.send(publisher, #"{"op":"pub","ch":"k","rid":1}"#)
        harness.broker.endOfInput(publisher, now: 0)
        #expect(!publisher.closeAfterFlush, "the receipt is still to come from Redis")
        let receipt = cluster.takeOutbox().first { $0.receipt != 0 }?.receipt ?? 0
        harness.broker.clusterPublished(receipt: receipt, seq: 1, nodes: 0)
        #expect(harness.frames(publisher).first?["seq"] as? Int == 1)
        #expect(publisher.closeAfterFlush, "closed once the last receipt was written")
    }
}

@Suite struct ClusterCatchUpTests {
    /// A history entry as the engine hands it over.
    private func entry(_ seq: Int, data: String) -> ClusterValue {
        Broker.catchUpEntry(RemoteEvent(seq: seq, from: 9, channel: Array("h.1".utf8), data: Array(data.utf8)))
    }

    @Test func aSubWithSinceWaitsForRedisThenSendsReplayAndBufferedEventsOnceInOrder() {
        let (harness, cluster) = BrokerHarness.clustered(node: 1)
        let client = harness.connect()
        harness.send(client, #"{"op":"sub","ch":"h.1","sub":"b","since":5,"rid":"r"}"#)
        #expect(harness.frames(client).isEmpty, "no answer before Redis read the history")
        let calls = cluster.takeCalls()
        #expect(calls.count == 1 && calls.first?.script == .catchUp)
        let ticket = cluster.takeInterest().last?.ticket ?? 0
        #expect(ticket > 0 && calls.first?.afterTicket == ticket, "history is read after the barrier")
        harness.broker.interestSeen(upTo: ticket)
        // Live events that arrive while the history is read: 6 and 7 are in it, 8 is not.
        for seq in 6...8 {
            harness.broker.deliverRemote(RemoteEvent(seq: seq, from: 9, channel: Array("h.1".utf8), data: Array("\(seq)".utf8)))
        }
        #expect(harness.frames(client).isEmpty, "buffered until the catch-up is sent")
        let result = ClusterValue.array([.int(7), .int(3), .array([]), .array([entry(6, data: "6"), entry(7, data: "7")])])
        _ = harness.broker.clusterCallAnswered(token: calls[0].token, result: result)
        let frames = harness.frames(client)
        #expect(frames.first?["recovered"] as? Bool == true && frames.first?["rid"] as? String == "r")
        #expect(frames.dropFirst().map { $0["seq"] as? Int } == [6, 7, 8])
        #expect(frames.dropFirst().map { $0["replay"] as? Bool } == [true, true, nil])
        harness.broker.deliverRemote(channel: Array("h.1".utf8), seq: 9, from: 9, data: nil)
        #expect(harness.frames(client).map { $0["seq"] as? Int } == [9], "then live")
    }

    @Test func aCatchUpRedisCouldNotRunEndsTheSubscriptionWithUnavailable() {
        let (harness, cluster) = BrokerHarness.clustered(node: 1)
        let client = harness.connect()
        harness.send(client, #"{"op":"sub","ch":"h.1","sub":"b","current":true}"#)
        let calls = cluster.takeCalls()
        cluster.takeInterest().forEach { harness.broker.interestSeen(upTo: $0.ticket) }
        _ = harness.broker.clusterCallAnswered(token: calls[0].token, result: .failure("connection to Redis lost"))
        #expect(harness.frames(client).first?["error"] as? String == "unavailable")
        let subs = harness.request(client, #"{"op":"subs"}"#)
        #expect((subs["subs"] as? [Any])?.isEmpty == true, "no half-made subscription is left: \(subs)")
    }
}
