import Foundation
import Testing
import HeraldBroker

/// Issue 13, item 1, in the state machine: after `endOfInput` a session is closed once every
/// answer it is owed is queued, never before.
@Suite struct HalfCloseTests {
    /// A harness whose broker journals, so state answers are held until `durable`.
    private func journaling() -> BrokerHarness {
        var config = BrokerConfig(epoch: "e")
        config.journaling = true
        return BrokerHarness(config)
    }

    @Test func withNothingOutstandingItClosesAfterWhatIsQueued() {
        let harness = BrokerHarness()
        let client = harness.connect()
        harness.send(client, #"{"op":"ping","rid":1}"#)
        harness.broker.endOfInput(client, now: 0)
        #expect(client.inputEnded)
        #expect(client.closeAfterFlush)
        #expect(harness.lines(client).first?.hasPrefix(#"{"pong""#) == true, "the answer stays queued")
    }

    @Test func answersHeldForTheDataFolderKeepItOpenUntilDurable() {
        let harness = journaling()
        let client = harness.connect()
        harness.send(client, #"{"op":"set","ch":"a","value":1,"rid":1}"#)
        harness.send(client, #"{"op":"get","ch":"a","rid":2}"#)
        harness.broker.endOfInput(client, now: 0)
        #expect(!client.closeAfterFlush, "the set's answer is still held")
        harness.broker.durable(upTo: 1, now: 5)
        #expect(client.closeAfterFlush)
        #expect(client.closeRequestedAt == 5, "the close grace counts from the release, not from an older time")
        let lines = harness.lines(client)
        #expect(lines.count == 2)
        #expect(lines.first?.hasPrefix(#"{"ok":"set","rid":1"#) == true)
    }

    @Test func aRequestKeepsItOpenUntilItsReply() {
        let harness = BrokerHarness()
        let responder = harness.connect()
        harness.subscribe(responder, #""ch":"svc""#)
        let asker = harness.connect()
        harness.send(asker, #"{"op":"req","ch":"svc","rid":"q","timeout_ms":5000}"#)
        harness.broker.endOfInput(asker, now: 0)
        #expect(!asker.closeAfterFlush)
        let token = harness.frames(responder).first?["reply"] as? String ?? ""
        harness.send(responder, #"{"op":"reply","to":"\#(token)","data":7}"#)
        #expect(asker.closeAfterFlush)
        #expect(harness.lines(asker) == [#"{"ok":"req","rid":"q","from":"c1","data":7}"#])
    }

    @Test func aRequestKeepsItOpenUntilItsTimeoutAndHeartbeatsLeaveItAlone() {
        let harness = BrokerHarness(BrokerConfig(heartbeatMs: 100, epoch: "e"))
        let responder = harness.connect()
        harness.subscribe(responder, #""ch":"svc""#)
        let asker = harness.connect()
        harness.send(asker, #"{"op":"req","ch":"svc","rid":"q","timeout_ms":1000}"#)
        harness.broker.endOfInput(asker, now: 0)
        _ = harness.broker.tick(now: 900)
        #expect(!asker.closeAfterFlush, "a half-closed peer cannot answer a ping: no heartbeat timeout")
        #expect(harness.lines(asker).isEmpty, "and no ping")
        _ = harness.broker.tick(now: 1_000)
        #expect(asker.closeAfterFlush)
        #expect(harness.frames(asker).first?["error"] as? String == "timeout")
        _ = responder
    }

    @Test func itsSubscriptionsEndWithItsInput() {
        let harness = BrokerHarness()
        let listener = harness.connect()
        harness.subscribe(listener, #""ch":"news""#)
        let responder = harness.connect()
        harness.subscribe(responder, #""ch":"svc""#)
        harness.send(listener, #"{"op":"req","ch":"svc","timeout_ms":5000}"#)
        harness.broker.endOfInput(listener, now: 0)
        let publisher = harness.connect()
        #expect(harness.request(publisher, #"{"op":"pub","ch":"news","data":1,"rid":1}"#)["receivers"] as? Int == 0)
        #expect(harness.lines(listener).isEmpty)
    }

    @Test func aSignalKeepsItOpenUntilItsOutcome() {
        let harness = BrokerHarness()
        let handler = harness.connect()
        harness.subscribe(handler, #""ch":"ui.menu","sub":"h","handle":true"#)
        let sender = harness.connect()
        harness.send(sender, #"{"op":"signal","ch":"ui.menu","rid":"x"}"#)
        harness.broker.endOfInput(sender, now: 0)
        #expect(!sender.closeAfterFlush)
        let offer = harness.frames(handler).first { $0["signal"] != nil }
        harness.send(handler, #"{"op":"handled","id":"\#(offer?["id"] ?? "")","action":"stop"}"#)
        #expect(sender.closeAfterFlush)
        let result = harness.frames(sender).first
        #expect(result?["ok"] as? String == "signal")
        #expect(result?["handled_by"] as? String == "c1/h")
    }

    @Test func anOfferAHalfClosedHandlerHeldPassesAtOnce() {
        let harness = BrokerHarness()
        let near = harness.connect()
        harness.subscribe(near, #""ch":"ui.menu","sub":"near","handle":true"#)
        let parent = harness.connect()
        harness.subscribe(parent, #""ch":"ui","sub":"up","handle":true"#)
        let sender = harness.connect()
        harness.send(sender, #"{"op":"signal","ch":"ui.menu"}"#)
        #expect(harness.frames(near).contains { $0["signal"] != nil })
        harness.broker.endOfInput(near, now: 0)
        #expect(near.closeAfterFlush, "it asked for nothing, so it closes")
        let offer = harness.frames(parent).first { $0["signal"] != nil }
        #expect(offer?["signal"] as? String == "ui", "the signal moved on without waiting for the offer's timeout")
    }
}
