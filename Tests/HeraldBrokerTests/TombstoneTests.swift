import Foundation
import Testing
@testable import HeraldBroker
import HeraldWire

/// Issue 12, section 3: the tombstones `del` leaves are collected once no `since` could
/// still replay their `del` and nobody subscribes to the channel exactly, without `rev`
/// ever going back.
@Suite struct TombstoneTests {
    private func harness(history: Int, journaling: Bool = false) -> BrokerHarness {
        var config = BrokerConfig(epoch: "e")
        config.history = history
        config.journaling = journaling
        return BrokerHarness(config)
    }

    private let name = Array("t.x".utf8)

    @Test func aTombstoneGoesOnceHistoryLostItsDelAndNobodySubscribesExactly() {
        let harness = harness(history: 2)
        let s = harness.connect()
        harness.send(s, #"{"op":"set","ch":"t.x","value":1}"#)
        harness.send(s, #"{"op":"del","ch":"t.x"}"#)
        _ = harness.broker.tick(now: 10)
        #expect(harness.broker.store.state(of: name)?.rev == 2, "history still holds the del: since may replay it")
        harness.subscribe(s, #""ch":"t.x","sub":"exact""#)
        harness.subscribe(s, #""ch":"t.*","sub":"wild""#)
        harness.send(s, #"{"op":"pub","ch":"t.x"}"#)
        harness.send(s, #"{"op":"pub","ch":"t.x"}"#)
        _ = harness.broker.tick(now: 20)
        #expect(harness.broker.store.state(of: name) != nil, "an exact subscriber keeps it")
        harness.send(s, #"{"op":"unsub","sub":"exact"}"#)
        _ = harness.frames(s)
        _ = harness.broker.tick(now: 30)
        #expect(harness.broker.store.state(of: name) == nil, "a wildcard subscriber does not keep it")
        #expect(harness.broker.store.revFloor == 2)
        #expect(harness.broker.store.retainedBytes == 0)
    }

    @Test func aChannelSetAgainAfterItsTombstoneWentTakesARevAboveItsOldOnes() {
        let harness = harness(history: 0)
        let s = harness.connect()
        for line in [#"{"op":"set","ch":"t.x","value":1}"#, #"{"op":"set","ch":"t.x","value":2}"#,
                     #"{"op":"del","ch":"t.x"}"#] { harness.send(s, line) }
        _ = harness.frames(s)
        _ = harness.broker.tick(now: 10)
        let got = harness.request(s, #"{"op":"get","ch":"t.x"}"#)
        #expect(got["rev"] as? Int == 0 && got["value"] is NSNull, "collected: as if never set")
        #expect(harness.broker.channels[name] == nil, "and the channel record went in the same tick")
        let again = harness.request(s, #"{"op":"set","ch":"t.x","value":3,"if_rev":0}"#)
        #expect(again["rev"] as? Int == 4, "above the 3 it had: a mirror holding rev 3 takes it as new")
        #expect(harness.request(s, #"{"op":"append","ch":"t.fresh","value":1}"#)["rev"] as? Int == 4,
                "every channel without state starts above the floor")
    }

    @Test func collectionIsJournaledAndReplayingTheRecordsRebuildsStoreAndFloor() {
        let harness = harness(history: 0, journaling: true)
        let s = harness.connect()
        harness.send(s, #"{"op":"set","ch":"t.x","value":1}"#)
        harness.send(s, #"{"op":"set","ch":"t.y","value":1}"#)
        harness.send(s, #"{"op":"del","ch":"t.x"}"#)
        _ = harness.broker.tick(now: 10)
        harness.send(s, #"{"op":"set","ch":"t.x","value":5}"#)
        var records: [StateRecord] = []
        harness.broker.drainRecords { drained, _ in records = drained }
        #expect(records.contains(.forget(channel: name, rev: 2)))
        #expect(records.last == .set(channel: name, rev: 3, value: Array("5".utf8)))
        let replica = StateStore()
        for record in records {
            var bytes: [UInt8] = []
            record.encode(into: &bytes)
            guard let decoded = bytes.withUnsafeBytes({ StateRecord.decode($0) }) else { Issue.record("undecodable"); return }
            #expect(replica.apply(decoded) == .applied)
        }
        #expect(replica.entries == harness.broker.store.entries)
        #expect(replica.revFloor == 2)
    }

    @Test func restoredTombstonesAreCollectedAtTheFirstTickUnlessSubscribedExactly() {
        let harness = harness(history: 100, journaling: true)
        let seed = StateStore()
        for (channel, rev) in [("t.a", 5), ("t.b", 7)] {
            seed.apply(.set(channel: Array(channel.utf8), rev: rev - 1, value: Array("1".utf8)))
            seed.apply(.delete(channel: Array(channel.utf8), rev: rev))
        }
        harness.broker.restore(seed.entries, revFloor: 3)
        let s = harness.connect()
        harness.subscribe(s, #""ch":"t.b""#)
        _ = harness.broker.tick(now: 10)
        #expect(harness.broker.store.state(of: Array("t.a".utf8)) == nil, "its del event went with the last run")
        #expect(harness.broker.store.state(of: Array("t.b".utf8))?.rev == 7)
        #expect(harness.broker.store.revFloor == 5)
        var records: [StateRecord] = []
        harness.broker.drainRecords { drained, _ in records = drained }
        #expect(records == [.forget(channel: Array("t.a".utf8), rev: 5)])
    }

    @Test func eachTickVisitsAtMostItsBudgetOfTombstones() {
        let harness = harness(history: 0)
        let s = harness.connect()
        for k in 0..<25 {
            harness.send(s, #"{"op":"set","ch":"t.\#(k)","value":1}"#)
            harness.send(s, #"{"op":"del","ch":"t.\#(k)"}"#)
        }
        harness.send(s, #"{"op":"set","ch":"t.3","value":2}"#)  // set again: no longer a tombstone
        harness.broker.sweepTombstones(budget: 10)
        #expect(harness.broker.store.entries.count == 25 - 9, "t.3 was visited and skipped")
        harness.broker.sweepTombstones(budget: 10)
        harness.broker.sweepTombstones(budget: 10)
        #expect(harness.broker.store.entries.count == 1)
        #expect(harness.broker.retention.tombstones.count == 0)
    }
}
