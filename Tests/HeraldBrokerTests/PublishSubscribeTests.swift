import Foundation
import Testing
import HeraldBroker

@Suite struct PublishSubscribeTests {
    @Test func infoFrameDescribesTheSession() {
        let harness = BrokerHarness(BrokerConfig(maxLine: 4096, heartbeatMs: 500, epoch: "ep"))
        let session = harness.broker.connect(id: 7, now: 0)
        let info = harness.frames(session).first?["info"] as? [String: Any]
        #expect(info?["server"] as? String == "heraldd")
        #expect(info?["client"] as? String == "c7")
        #expect(info?["proto"] as? Int == 1)
        #expect(info?["epoch"] as? String == "ep")
        #expect(info?["max_line"] as? Int == 4096)
        #expect(info?["heartbeat_ms"] as? Int == 500)
        #expect(info?["auth"] as? Bool == false)
    }

    @Test func publishedDataReachesSubscriberByteForByte() {
        let harness = BrokerHarness()
        let subscriber = harness.connect()
        let publisher = harness.connect()
        let ok = harness.subscribe(subscriber, #""ch":"cars.updated","sub":"s1""#)
        #expect(ok["ok"] as? String == "sub")
        #expect(ok["sub"] as? String == "s1")
        #expect(ok["ch"] as? String == "cars.updated")
        harness.send(publisher, #"{"op":"pub","ch":"cars.updated","data": {"id" : 42,"tags":[1, 2.50,"\u00e9"]}}"#)
        #expect(harness.lines(publisher).isEmpty, "pub without rid is fire-and-forget")
        let lines = harness.lines(subscriber)
        #expect(lines == [#"{"event":"cars.updated","sub":"s1","seq":1,"from":"c2","data":{"id" : 42,"tags":[1, 2.50,"\u00e9"]}}"#])
    }

    @Test func eventWithoutDataHasNoDataField() {
        let harness = BrokerHarness()
        let subscriber = harness.connect()
        harness.subscribe(subscriber, #""ch":"a""#)
        harness.send(subscriber, #"{"op":"pub","ch":"a"}"#)
        #expect(harness.lines(subscriber) == [#"{"event":"a","sub":"s1","seq":1,"from":"c1"}"#])
    }

    @Test func receiptCarriesSeqAndReceivers() {
        let harness = BrokerHarness()
        let a = harness.connect()
        let b = harness.connect()
        harness.subscribe(a, #""ch":"x.y""#)
        harness.subscribe(b, #""ch":"x.*""#)
        let first = harness.request(a, #"{"op":"pub","ch":"x.y","data":1,"rid":"r1"}"#)
        // a's own copy arrives in the same queue as the receipt; request() saw two frames.
        let frames = first["frames"] as? [[String: Any]] ?? []
        #expect(frames.count == 2)
        let receipt = frames.first { $0["ok"] != nil }
        #expect(receipt?["seq"] as? Int == 1)
        #expect(receipt?["receivers"] as? Int == 2)
        #expect(receipt?["rid"] as? String == "r1")
    }

    @Test func seqCountsPerChannel() {
        let harness = BrokerHarness()
        let s = harness.connect()
        harness.subscribe(s, #""ch":">""#)
        for channel in ["a", "b", "a", "a", "b"] { harness.send(s, #"{"op":"pub","ch":"\#(channel)"}"#) }
        let seqs = harness.frames(s).map { "\($0["event"] ?? "")\($0["seq"] ?? "")" }
        #expect(seqs == ["a1", "b1", "a2", "a3", "b2"])
    }

    @Test func everyMatchingSubscriptionGetsItsOwnCopy() {
        let harness = BrokerHarness()
        let s = harness.connect()
        harness.subscribe(s, #""ch":"app.settings.profile","sub":"exact""#)
        harness.subscribe(s, #""ch":"app.*.profile","sub":"star""#)
        harness.subscribe(s, #""ch":"app.>","sub":"tail""#)
        harness.subscribe(s, #""ch":"app.*","sub":"miss""#)
        harness.send(s, #"{"op":"pub","ch":"app.settings.profile","data":true}"#)
        let subs = harness.frames(s).compactMap { $0["sub"] as? String }
        #expect(subs == ["exact", "star", "tail"])
    }

    @Test func echoFalseSkipsOwnPublications() {
        let harness = BrokerHarness()
        let quiet = harness.connect(echo: false)
        let other = harness.connect()
        harness.subscribe(quiet, #""ch":"t""#)
        harness.subscribe(other, #""ch":"t""#)
        let receipt = harness.request(quiet, #"{"op":"pub","ch":"t","rid":1}"#)
        #expect(receipt["receivers"] as? Int == 1)
        #expect(harness.lines(other).count == 1)
        harness.send(other, #"{"op":"pub","ch":"t"}"#)
        #expect(harness.frames(quiet).first?["from"] as? String == "c2")
    }

    @Test func onceSubscriptionDeliversOnceMarkedLast() {
        let harness = BrokerHarness()
        let s = harness.connect()
        harness.subscribe(s, #""ch":"t","once":true"#)
        harness.send(s, #"{"op":"pub","ch":"t","data":1}"#)
        harness.send(s, #"{"op":"pub","ch":"t","data":2}"#)
        let events = harness.frames(s)
        #expect(events.count == 1)
        #expect(events.first?["last"] as? Bool == true)
        #expect(harness.broker.stats.msgsOut == 1)
        let subs = harness.request(s, #"{"op":"subs"}"#)["subs"] as? [Any]
        #expect(subs?.isEmpty == true)
    }

    @Test func maxSubscriptionEndsAfterMaxDeliveries() {
        let harness = BrokerHarness()
        let s = harness.connect()
        harness.subscribe(s, #""ch":"t","max":3"#)
        for n in 1...5 { harness.send(s, #"{"op":"pub","ch":"t","data":\#(n)}"#) }
        let events = harness.frames(s)
        #expect(events.map { $0["data"] as? Int } == [1, 2, 3])
        #expect(events.map { $0["last"] as? Bool } == [nil, nil, true])
    }

    @Test func queueGroupDeliversEachEventToExactlyOneMemberRoundRobin() {
        let harness = BrokerHarness()
        let members = (0..<3).map { _ in harness.connect() }
        for member in members { harness.subscribe(member, #""ch":"work","group":"g""#) }
        let outsider = harness.connect()
        harness.subscribe(outsider, #""ch":"work""#)
        for n in 0..<6 { harness.send(outsider, #"{"op":"pub","ch":"work","data":\#(n)}"#) }
        let received = members.map { harness.frames($0).compactMap { $0["data"] as? Int } }
        #expect(received == [[0, 3], [1, 4], [2, 5]])
        #expect(harness.frames(outsider).count == 6)
    }

    @Test func queueGroupsAreKeyedByNameAndPattern() {
        let harness = BrokerHarness()
        let a = harness.connect()
        let b = harness.connect()
        harness.subscribe(a, #""ch":"w.1","group":"g""#)
        harness.subscribe(b, #""ch":"w.*","group":"g""#)
        harness.send(a, #"{"op":"pub","ch":"w.1"}"#)
        #expect(harness.frames(a).count == 1)
        #expect(harness.frames(b).count == 1)
    }

    @Test func argsAreEchoedWithEachEvent() {
        let harness = BrokerHarness()
        let s = harness.connect()
        harness.subscribe(s, #""ch":"t","args":{"row":3,"view":"menu"}"#)
        harness.send(s, #"{"op":"pub","ch":"t","data":0}"#)
        #expect(harness.lines(s) == [#"{"event":"t","sub":"s1","seq":1,"from":"c1","args":{"row":3,"view":"menu"},"data":0}"#])
    }

    @Test func subscribingAgainUnderSameNameReplaces() {
        let harness = BrokerHarness()
        let s = harness.connect()
        harness.subscribe(s, #""ch":"a","sub":"x""#)
        harness.subscribe(s, #""ch":"b","sub":"x""#)
        harness.send(s, #"{"op":"pub","ch":"a"}"#)
        harness.send(s, #"{"op":"pub","ch":"b"}"#)
        #expect(harness.frames(s).compactMap { $0["event"] as? String } == ["b"])
    }

    @Test func assignedNamesCountUpAndSkipTakenOnes() {
        let harness = BrokerHarness()
        let s = harness.connect()
        harness.subscribe(s, #""ch":"a","sub":"s2""#)
        #expect(harness.subscribe(s, #""ch":"a""#)["sub"] as? String == "s1")
        #expect(harness.subscribe(s, #""ch":"a""#)["sub"] as? String == "s3")
    }

    @Test func unsubscribeByNameByPatternAndAll() {
        let harness = BrokerHarness()
        let s = harness.connect()
        harness.subscribe(s, #""ch":"a","sub":"one""#)
        harness.subscribe(s, #""ch":"b.*","sub":"two""#)
        harness.subscribe(s, #""ch":"b.*","sub":"three""#)
        harness.subscribe(s, #""ch":"c","sub":"four""#)
        #expect(harness.request(s, #"{"op":"unsub","sub":"one"}"#)["count"] as? Int == 1)
        #expect(harness.request(s, #"{"op":"unsub","sub":"one"}"#)["count"] as? Int == 0)
        #expect(harness.request(s, #"{"op":"unsub","ch":"b.*"}"#)["count"] as? Int == 2)
        #expect(harness.request(s, #"{"op":"unsub","all":true}"#)["count"] as? Int == 1)
        harness.send(s, #"{"op":"pub","ch":"c"}"#)
        #expect(harness.lines(s).isEmpty)
        #expect(harness.request(s, #"{"op":"unsub"}"#)["error"] as? String == "missing_field")
    }

    @Test func disconnectRemovesSubscriptions() {
        let harness = BrokerHarness()
        let gone = harness.connect()
        let stays = harness.connect()
        harness.subscribe(gone, #""ch":"t""#)
        harness.broker.disconnect(gone)
        let receipt = harness.request(stays, #"{"op":"pub","ch":"t","rid":1}"#)
        #expect(receipt["receivers"] as? Int == 0)
        #expect(harness.broker.connectionCount == 1)
    }
}
