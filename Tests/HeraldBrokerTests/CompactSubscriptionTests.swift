import Foundation
@testable import HeraldBroker
import Testing

/// `sub` with `compact:true`: that subscription's events leave out `sub` and `from` (the
/// frame is `{"event":CH,"seq":S,…,"data":D}`), on every path an event takes (live fan-out,
/// its staged and unstaged forms, queue groups, requests, replays and `current`), while the
/// other subscribers of the same event get the whole frame.
@Suite struct CompactSubscriptionTests {
    @Test func compactAndFullSubscribersOfOneEventEachGetTheirOwnFrame() {
        let harness = BrokerHarness()
        let compact = harness.connect(), full = harness.connect(), publisher = harness.connect()
        #expect(harness.subscribe(compact, #""ch":"t.*","sub":"k","compact":true"#)["ok"] as? String == "sub")
        harness.subscribe(full, #""ch":"t.a","sub":"f""#)
        let big = String(repeating: "y", count: 2000)
        harness.send(publisher, #"{"op":"pub","ch":"t.a","data":{"n":1}}"#)
        harness.send(publisher, #"{"op":"pub","ch":"t.a","data":"\#(big)"}"#)
        #expect(harness.lines(compact) == [
            #"{"event":"t.a","seq":1,"data":{"n":1}}"#,
            #"{"event":"t.a","seq":2,"data":"\#(big)"}"#,
        ])
        #expect(harness.lines(full) == [
            #"{"event":"t.a","sub":"f","seq":1,"from":"c3","data":{"n":1}}"#,
            #"{"event":"t.a","sub":"f","seq":2,"from":"c3","data":"\#(big)"}"#,
        ])
    }

    @Test func compactFramesKeepArgsLastAndDropped() {
        let harness = BrokerHarness(BrokerConfig(maxPending: 400, overflow: .drop, epoch: "e1"))
        let reader = harness.connect(), publisher = harness.connect()
        harness.subscribe(reader, #""ch":"a","sub":"x","compact":true,"args":[1],"max":30"#)
        for n in 1...20 { harness.send(publisher, #"{"op":"pub","ch":"a","data":"\#(String(repeating: "z", count: 40))\#(n)"}"#) }
        let first = harness.frames(reader)
        #expect(!first.isEmpty && first.count < 20, "some were dropped at max_pending 400")
        #expect(first.allSatisfy { $0["sub"] == nil && $0["from"] == nil && ($0["args"] as? [Int]) == [1] })
        harness.send(publisher, #"{"op":"pub","ch":"a","data":0}"#)
        let next = harness.lines(reader)
        #expect(next == [#"{"event":"a","seq":21,"args":[1],"dropped":\#(20 - first.count),"data":0}"#])
    }

    @Test func compactGroupMembersAndRespondersLoseOnlySubAndFrom() {
        let harness = BrokerHarness()
        let member = harness.connect(), responder = harness.connect(), asker = harness.connect()
        harness.subscribe(member, #""ch":"jobs","group":"w","compact":true"#)
        harness.subscribe(responder, #""ch":"math.double","compact":true"#)
        harness.send(asker, #"{"op":"pub","ch":"jobs","data":5}"#)
        #expect(harness.lines(member) == [#"{"event":"jobs","seq":1,"data":5}"#])
        harness.send(asker, #"{"op":"req","ch":"math.double","data":21}"#)
        let event = harness.frames(responder).first ?? [:]
        #expect(event["sub"] == nil && event["from"] == nil && event["data"] as? Int == 21)
        #expect((event["reply"] as? String)?.isEmpty == false)
    }

    @Test func compactReplaysAndCurrentValuesLeaveOutSubAndFrom() {
        let harness = BrokerHarness()
        let writer = harness.connect(), reader = harness.connect()
        for n in 1...3 { harness.send(writer, #"{"op":"pub","ch":"h","data":\#(n)}"#) }
        _ = harness.request(writer, #"{"op":"set","ch":"v","value":7}"#)
        harness.send(reader, #"{"op":"sub","ch":"h","since":1,"compact":true}"#)
        #expect(Array(harness.lines(reader).dropFirst()) == [
            #"{"event":"h","seq":2,"replay":true,"data":2}"#,
            #"{"event":"h","seq":3,"replay":true,"data":3}"#,
        ])
        harness.send(reader, #"{"op":"sub","ch":"v","current":true,"compact":true}"#)
        #expect(Array(harness.lines(reader).dropFirst()) == [#"{"event":"v","kind":"current","rev":1,"value":7}"#])
    }

    @Test func compactIsListedAndRefusedForAHandler() {
        let harness = BrokerHarness()
        let client = harness.connect()
        harness.subscribe(client, #""ch":"a","sub":"x","compact":true"#)
        let listed = harness.request(client, #"{"op":"subs"}"#)["subs"] as? [[String: Any]] ?? []
        #expect(listed.first?["compact"] as? Bool == true)
        let refused = harness.request(client, #"{"op":"sub","ch":"b","handle":true,"compact":true}"#)
        #expect(refused["error"] as? String == "bad_field")
        let wrongType = harness.request(client, #"{"op":"sub","ch":"b","compact":1}"#)
        #expect(wrongType["error"] as? String == "bad_field")
    }
}

/// The same in cluster mode: events from other nodes and a `since` catch-up read from Redis.
@Suite struct ClusterCompactSubscriptionTests {
    @Test func remoteEventsAndARedisCatchUpReachACompactSubscriptionWithoutSubAndFrom() {
        let (harness, cluster) = BrokerHarness.clustered(node: 1)
        let client = harness.connect()
        harness.send(client, #"{"op":"sub","ch":"h.1","since":5,"compact":true}"#)
        let calls = cluster.takeCalls()
        harness.broker.interestSeen(upTo: cluster.takeInterest().last?.ticket ?? 0)
        let entry = Broker.catchUpEntry(RemoteEvent(seq: 6, from: 9, channel: Array("h.1".utf8), data: Array("6".utf8)))
        _ = harness.broker.clusterCallAnswered(
            token: calls.first?.token ?? 0, result: .array([.int(6), .int(3), .array([]), .array([entry])]))
        harness.broker.deliverRemote(channel: Array("h.1".utf8), seq: 7, from: (7 << 32) | 5, data: nil)
        #expect(Array(harness.lines(client).dropFirst()) == [
            #"{"event":"h.1","seq":6,"replay":true,"data":6}"#,
            #"{"event":"h.1","seq":7}"#,
        ])
    }
}
