import Foundation
import Testing
@testable import HeraldBroker

/// Resuming after a Redis outage, the broker's side (docs/cluster.md, "Redis failover"): the
/// events published while the node could not hear are read back from history and delivered
/// in `seq` order before the live events held meanwhile, each once, and only to the
/// subscriptions that were listening before the outage.
@Suite struct ClusterResumeModeTests {
    private func clustered() -> (BrokerHarness, ClusterState) { BrokerHarness.clustered(node: 3) }

    private func event(_ seq: Int) -> RemoteEvent {
        RemoteEvent(seq: seq, from: 9, channel: Array("r.1".utf8), data: Array(String(seq).utf8))
    }

    private func history(_ seqs: ClosedRange<Int>) -> ClusterValue {
        .array([.int(seqs.upperBound), .int(seqs.lowerBound), .array([]), .array(seqs.map { Broker.catchUpEntry(event($0)) })])
    }

    private func subscribed(_ harness: BrokerHarness, _ cluster: ClusterState, _ name: String) -> Session {
        let session = harness.connect()
        harness.send(session, #"{"op":"sub","ch":"r.1","sub":"\#(name)"}"#)
        cluster.takeInterest().forEach { harness.broker.interestSeen(upTo: $0.ticket) }
        _ = harness.frames(session)
        return session
    }

    private func seqs(_ harness: BrokerHarness, _ session: Session) -> [Int] {
        harness.frames(session).compactMap { $0["seq"] as? Int }
    }

    @Test func missedEventsComeBeforeTheHeldLiveOnesEachOnce() {
        let (harness, cluster) = clustered()
        let subscriber = subscribed(harness, cluster, "s")
        for seq in 1...3 { harness.broker.deliverRemote(event(seq)) }
        #expect(seqs(harness, subscriber) == [1, 2, 3])
        let points = harness.broker.beginResume()
        #expect(points.map(\.seq) == [3] && points.map(\.wanted) == [true])
        harness.broker.deliverRemote(event(6))
        harness.broker.deliverRemote(event(7))
        #expect(seqs(harness, subscriber).isEmpty, "live events wait for the missed ones")
        harness.broker.endResume(Array("r.1".utf8), history: history(4...6))
        #expect(seqs(harness, subscriber) == [4, 5, 6, 7])
        #expect(!cluster.isResuming, "a held event above the floor ends it: the link keeps seq order")
        // The history answer can overtake live events on the other link: those are dropped.
        _ = harness.broker.beginResume()
        harness.broker.endResume(Array("r.1".utf8), history: history(8...9))
        #expect(seqs(harness, subscriber) == [8, 9])
        harness.broker.deliverRemote(event(8))
        harness.broker.deliverRemote(event(9))
        harness.broker.deliverRemote(event(10))
        #expect(seqs(harness, subscriber) == [10], "a late live copy of what history gave is dropped")
        #expect(!cluster.isResuming, "the floor goes at the first event above it")
    }

    @Test func aSubscriptionMadeAfterTheLastDeliveryDoesNotGetOlderEvents() {
        let (harness, cluster) = clustered()
        let early = subscribed(harness, cluster, "early")
        harness.broker.deliverRemote(event(1))
        _ = harness.frames(early)
        let late = subscribed(harness, cluster, "late")
        _ = harness.broker.beginResume()
        harness.broker.endResume(Array("r.1".utf8), history: history(2...4))
        #expect(seqs(harness, early) == [2, 3, 4])
        #expect(seqs(harness, late).isEmpty, "its start is not known to precede them")
        harness.broker.deliverRemote(event(5))
        #expect(seqs(harness, late) == [5])
    }

    @Test func aResumeCutShortByAnotherOutageDeliversWhatItHeld() {
        let (harness, cluster) = clustered()
        let subscriber = subscribed(harness, cluster, "s")
        harness.broker.deliverRemote(event(1))
        _ = harness.frames(subscriber)
        _ = harness.broker.beginResume()
        harness.broker.deliverRemote(event(4))
        harness.broker.abandonResume()
        #expect(seqs(harness, subscriber) == [4])
        #expect(!cluster.isResuming)
    }

    @Test func aChannelNobodyListensToAnyMoreIsRaisedButNotRead() {
        let (harness, cluster) = clustered()
        let subscriber = subscribed(harness, cluster, "s")
        harness.broker.deliverRemote(event(2))
        harness.send(subscriber, #"{"op":"unsub","sub":"s"}"#)
        let points = harness.broker.beginResume()
        #expect(points.map(\.seq) == [2] && points.map(\.wanted) == [false])
        #expect(!cluster.isResuming)
    }
}
