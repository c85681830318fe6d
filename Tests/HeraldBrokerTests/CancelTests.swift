import Foundation
import Testing
@testable import HeraldBroker

/// `cancel {of}` (issue 17, "Cancellation everywhere"): a connection withdraws a `req` or a
/// `signal` it started and nothing of it is left on the daemon.
@Suite struct CancelTests {
    private func stats(_ harness: BrokerHarness, _ session: Session) -> [String: Any] {
        harness.request(session, #"{"op":"stats"}"#)
    }

    private func handler(_ harness: BrokerHarness, _ pattern: String, name: String) -> Session {
        let session = harness.connect()
        harness.subscribe(session, #""ch":"\#(pattern)","sub":"\#(name)","handle":true"#)
        return session
    }

    private func offer(_ harness: BrokerHarness, _ session: Session) -> [String: Any]? {
        harness.frames(session).first { $0["signal"] != nil }
    }

    /// Whether the audit finds nothing pending: no request, timer, signal or indexed rid.
    private func nothingPending(_ harness: BrokerHarness) -> Bool {
        let audit = harness.broker.audit()
        return audit.requests == 0 && audit.timers == 0 && audit.signals == 0 && audit.operationRids == 0
            && audit.problems.isEmpty
    }

    // MARK: Requests

    @Test func cancelledRequestLeavesNoWaiterSoTheResponderReplyIsNotDelivered() {
        let harness = BrokerHarness()
        let asker = harness.connect()
        let responder = harness.connect()
        harness.subscribe(responder, #""ch":"math.double""#)
        harness.send(asker, #"{"op":"req","ch":"math.double","data":21,"rid":"q1","timeout_ms":500}"#)
        let token = harness.frames(responder).first?["reply"] as? String ?? ""
        #expect(stats(harness, asker)["requests"] as? Int == 1)
        let cancelled = harness.request(asker, #"{"op":"cancel","of":"q1","rid":"c1"}"#)
        #expect(cancelled["ok"] as? String == "cancel")
        #expect(cancelled["rid"] as? String == "c1")
        #expect(cancelled["count"] as? Int == 1)
        let figures = stats(harness, asker)
        #expect(figures["requests"] as? Int == 0, "the waiter went at once")
        #expect(figures["timers"] as? Int == 0, "and its deadline with it")
        #expect(harness.broker.nextDeadline == nil)
        let late = harness.request(responder, #"{"op":"reply","to":"\#(token)","data":42,"rid":7}"#)
        #expect(late["delivered"] as? Bool == false, "answered as a reply to an unknown token")
        harness.broker.fireDeadlines(now: 1_000)
        #expect(harness.lines(asker).isEmpty, "the requester gets nothing more: no reply, no timeout")
        #expect(nothingPending(harness))
    }

    @Test func cancelWithoutItsOwnRidIsAnsweredWithNothing() {
        let harness = BrokerHarness()
        let asker = harness.connect()
        let responder = harness.connect()
        harness.subscribe(responder, #""ch":"q""#)
        harness.send(asker, #"{"op":"req","ch":"q","rid":5}"#)
        harness.send(asker, #"{"op":"cancel","of":5}"#)
        #expect(harness.lines(asker).isEmpty, "fire-and-forget, like reply and handled")
        #expect(nothingPending(harness))
    }

    @Test func cancellingAnUnknownOrFinishedRidWithdrawsNothingAndIsNoError() {
        let harness = BrokerHarness()
        let asker = harness.connect()
        let responder = harness.connect()
        harness.subscribe(responder, #""ch":"q""#)
        let unknown = harness.request(asker, #"{"op":"cancel","of":"never-sent","rid":1}"#)
        #expect(unknown["ok"] as? String == "cancel" && unknown["count"] as? Int == 0)
        harness.send(asker, #"{"op":"req","ch":"q","rid":"done"}"#)
        let token = harness.frames(responder).first?["reply"] as? String ?? ""
        harness.send(responder, #"{"op":"reply","to":"\#(token)","data":1}"#)
        #expect(harness.frames(asker).first?["ok"] as? String == "req")
        let finished = harness.request(asker, #"{"op":"cancel","of":"done","rid":2}"#)
        #expect(finished["count"] as? Int == 0)
        let again = harness.request(asker, #"{"op":"cancel","of":"done","rid":3}"#)
        #expect(again["count"] as? Int == 0, "idempotent")
        harness.send(asker, #"{"op":"cancel","of":"never-sent"}"#)
        #expect(harness.lines(asker).isEmpty, "without a rid nothing is said either way")
        #expect(nothingPending(harness))
    }

    @Test func cancelCannotWithdrawAnotherConnectionsRequestOrSignal() {
        let harness = BrokerHarness()
        let asker = harness.connect()
        let stranger = harness.connect()
        let responder = harness.connect()
        harness.subscribe(responder, #""ch":"q""#)
        let handling = handler(harness, "s", name: "h")
        harness.send(asker, #"{"op":"req","ch":"q","rid":1}"#)
        harness.send(asker, #"{"op":"signal","ch":"s","rid":1}"#)
        let token = harness.frames(responder).first?["reply"] as? String ?? ""
        let id = offer(harness, handling)?["id"] as? String ?? ""
        let refused = harness.request(stranger, #"{"op":"cancel","of":1,"rid":1}"#)
        #expect(refused["ok"] as? String == "cancel" && refused["count"] as? Int == 0,
                "the same rid on another connection names nothing of this one")
        harness.send(responder, #"{"op":"reply","to":"\#(token)","data":2}"#)
        harness.send(handling, #"{"op":"handled","id":"\#(id)","action":"stop"}"#)
        let answers = harness.frames(asker)
        #expect(answers.map { $0["ok"] as? String } == ["req", "signal"], "both still reach their sender")
        #expect(harness.lines(stranger).isEmpty)
        #expect(nothingPending(harness))
    }

    @Test func cancelWithdrawsEveryOperationStillUnderWaySentWithThatRid() {
        let harness = BrokerHarness()
        let asker = harness.connect()
        let responder = harness.connect()
        harness.subscribe(responder, #""ch":"q""#)
        _ = handler(harness, "s", name: "h")
        harness.send(asker, #"{"op":"req","ch":"q","rid":9}"#)
        harness.send(asker, #"{"op":"req","ch":"q","rid":9}"#)
        harness.send(asker, #"{"op":"signal","ch":"s","rid":9}"#)
        harness.send(asker, #"{"op":"req","ch":"q","rid":10}"#)
        #expect(harness.request(asker, #"{"op":"cancel","of":9,"rid":"c"}"#)["count"] as? Int == 3)
        #expect(stats(harness, asker)["requests"] as? Int == 1, "rid 10 is left alone")
    }

    @Test func ridIsMatchedAsTheJSONTextItWasSentAs() {
        let harness = BrokerHarness()
        let asker = harness.connect()
        let responder = harness.connect()
        harness.subscribe(responder, #""ch":"q""#)
        harness.send(asker, #"{"op":"req","ch":"q","rid":1}"#)
        #expect(harness.request(asker, #"{"op":"cancel","of":"1","rid":"a"}"#)["count"] as? Int == 0, "a string is not the number")
        #expect(harness.request(asker, #"{"op":"cancel","of":1,"rid":"b"}"#)["count"] as? Int == 1)
    }

    @Test func cancelWithoutOfIsMissingFieldAndAnObjectOfIsBadField() {
        let harness = BrokerHarness()
        let asker = harness.connect()
        let missing = harness.request(asker, #"{"op":"cancel","rid":1}"#)
        #expect(missing["error"] as? String == "missing_field" && missing["op"] as? String == "cancel")
        #expect(missing["rid"] as? Int == 1)
        let object = harness.request(asker, #"{"op":"cancel","of":{"rid":1}}"#)
        #expect(object["error"] as? String == "bad_field")
        #expect(harness.request(asker, #"{"op":"cancel","of":[1]}"#)["error"] as? String == "bad_field")
    }

    @Test func cancelledClusterRequestDropsItsLocalWaiterSoALateRemoteReplyIsDiscarded() {
        let (harness, cluster) = BrokerHarness.clustered(node: 5)
        let asker = harness.connect()
        harness.send(asker, #"{"op":"req","ch":"math.double","data":21,"rid":"q"}"#)
        let token = cluster.takeOutbox().first { $0.replyToken != nil }?.replyToken ?? []
        #expect(harness.request(asker, #"{"op":"cancel","of":"q","rid":"c"}"#)["count"] as? Int == 1)
        harness.broker.clusterRequestRouted(token: token, nodes: 1)
        harness.broker.clusterRequestUnheard(token: token)
        #expect(!harness.broker.remoteReply(token: token, from: (7 << 32) | 3, data: Array("42".utf8)),
                "the remote replier is told delivered:false")
        #expect(harness.lines(asker).isEmpty, "no reply, no no_responders")
        #expect(nothingPending(harness))
    }

    // MARK: Signals

    @Test func cancelledSignalIsOfferedToNoFurtherHandlerAndGetsNoResult() {
        let harness = BrokerHarness()
        let sender = harness.connect()
        let first = handler(harness, "app.settings", name: "screen")
        let next = handler(harness, "app", name: "root")
        harness.send(sender, #"{"op":"signal","ch":"app.settings","rid":"s1","timeout_ms":50}"#)
        let id = offer(harness, first)?["id"] as? String ?? ""
        #expect(stats(harness, sender)["signals"] as? Int == 1)
        let cancelled = harness.request(sender, #"{"op":"cancel","of":"s1","rid":"c"}"#)
        #expect(cancelled["count"] as? Int == 1)
        let figures = stats(harness, sender)
        #expect(figures["signals"] as? Int == 0)
        #expect(figures["timers"] as? Int == 0, "the holder's offer deadline went too")
        let verdict = harness.request(first, #"{"op":"handled","id":"\#(id)","action":"pass","rid":1}"#)
        #expect(verdict["ok"] as? String == "handled", "the holder's late verdict is ignored, not an error")
        harness.broker.fireDeadlines(now: 1_000)
        #expect(harness.lines(next).isEmpty, "the next handler is never offered it")
        #expect(harness.lines(sender).isEmpty, "no final ok")
        #expect(nothingPending(harness))
    }

    @Test func noCallbackReachesTheSenderAfterItsSignalIsCancelled() {
        let harness = BrokerHarness()
        let sender = harness.connect()
        let handling = handler(harness, "doc", name: "h")
        harness.send(sender, #"{"op":"signal","ch":"doc.save","rid":4}"#)
        let id = offer(harness, handling)?["id"] as? String ?? ""
        harness.send(handling, #"{"op":"callback","id":"\#(id)","data":1}"#)
        #expect(harness.frames(sender).first?["callback"] as? String == id, "a callback before the cancel arrives")
        harness.send(sender, #"{"op":"cancel","of":4}"#)
        let late = harness.request(handling, #"{"op":"callback","id":"\#(id)","data":2}"#)
        #expect(late["error"] as? String == "not_found", "the signal is no longer under way")
        harness.send(handling, #"{"op":"handled","id":"\#(id)","action":"stop"}"#)
        #expect(harness.lines(handling).isEmpty)
        #expect(harness.lines(sender).isEmpty, "no callback, no result")
        #expect(nothingPending(harness))
    }

    @Test func cancelledSignalWaitingBetweenLevelsLeavesNothingBehind() {
        let harness = BrokerHarness()
        let sender = harness.connect()
        let handling = handler(harness, "a", name: "h")
        for n in 0..<100 { harness.send(sender, #"{"op":"signal","ch":"a.b","rid":\#(n)}"#) }
        #expect(harness.frames(handling).count == 100)
        for n in 0..<100 { harness.send(sender, #"{"op":"cancel","of":\#(n)}"#) }
        #expect(harness.lines(sender).isEmpty)
        #expect(nothingPending(harness))
        #expect(harness.broker.audit().finishedOfferHolders == 1, "the handler remembers them, to ignore late verdicts")
    }
}
