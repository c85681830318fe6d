import Foundation
import Testing
import HeraldBroker

/// Records for the persistence layer and answers held until they are durable (issue 6).
@Suite struct JournalTests {
    private func journaling() -> BrokerHarness {
        var config = BrokerConfig(epoch: "e")
        config.journaling = true
        return BrokerHarness(config)
    }

    @Test func stateChangesEmitRecordsNumberedInOrder() {
        let harness = journaling()
        let client = harness.connect()
        harness.send(client, #"{"op":"set","ch":"a","value":1}"#)
        harness.send(client, #"{"op":"append","ch":"b","value":2}"#)
        harness.send(client, #"{"op":"get","ch":"a"}"#)
        harness.send(client, #"{"op":"touch","ch":"a"}"#)
        var drained: [StateRecord] = []
        var last = 0
        harness.broker.drainRecords { records, upTo in
            drained = records
            last = upTo
        }
        #expect(drained == [.set(channel: Array("a".utf8), rev: 1, value: Array("1".utf8)),
                            .append(channel: Array("b".utf8), rev: 1, element: Array("2".utf8))])
        #expect(last == 2)
        #expect(!harness.broker.hasPendingRecords)
    }

    @Test func okIsHeldUntilItsRecordIsDurableAndLaterFramesWaitBehindIt() {
        let harness = journaling()
        let client = harness.connect()
        harness.send(client, #"{"op":"set","ch":"a","value":1,"rid":1}"#)
        harness.send(client, #"{"op":"ping","rid":2}"#)
        harness.send(client, #"{"op":"set","ch":"a","value":2,"rid":3}"#)
        #expect(!client.hasWritableOutput)
        #expect(harness.lines(client).isEmpty)
        harness.broker.durable(upTo: 1)
        let first = harness.lines(client)
        #expect(first.count == 2)
        #expect(first.first?.hasPrefix(#"{"ok":"set","rid":1"#) == true)
        #expect(first.last?.hasPrefix(#"{"pong""#) == true)
        harness.broker.durable(upTo: 2)
        #expect(harness.lines(client) == [#"{"ok":"set","rid":3,"rev":2}"#])
    }

    @Test func subscribersAreNotHeldBackByTheWritersAcknowledgement() {
        let harness = journaling()
        let writer = harness.connect()
        let reader = harness.connect()
        harness.subscribe(reader, #""ch":"a""#)
        harness.send(writer, #"{"op":"set","ch":"a","value":1}"#)
        #expect(harness.lines(reader).count == 1)
        #expect(harness.lines(writer).isEmpty)
    }

    @Test func refusedChangesEmitNoRecord() {
        var config = BrokerConfig(epoch: "e")
        config.journaling = true
        config.stateLimits.maxValueBytes = 4
        let harness = BrokerHarness(config)
        let client = harness.connect()
        #expect(harness.request(client, #"{"op":"set","ch":"a","value":"toolong"}"#)["error"] as? String == "limit")
        #expect(harness.request(client, #"{"op":"set","ch":"a","value":1,"if_rev":5}"#)["error"] as? String == "conflict")
        #expect(!harness.broker.hasPendingRecords)
    }
}
