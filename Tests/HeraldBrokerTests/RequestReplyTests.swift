import Foundation
import Testing
import HeraldBroker

/// `req` / `reply` and the deadline queue behind request timeouts.
@Suite struct RequestReplyTests {
    private func stats(_ harness: BrokerHarness, _ session: Session) -> [String: Any] {
        harness.request(session, #"{"op":"stats"}"#)
    }

    @Test func firstReplyWinsAndLaterRepliesAreDroppedSilently() {
        let harness = BrokerHarness()
        let asker = harness.connect()
        let a = harness.connect()
        let b = harness.connect()
        harness.subscribe(a, #""ch":"math.double","sub":"m""#)
        harness.subscribe(b, #""ch":"math.*""#)
        harness.send(asker, #"{"op":"req","ch":"math.double","data":21,"rid":"q1"}"#)
        #expect(harness.lines(asker).isEmpty, "the answer waits for a reply")
        let event = harness.frames(a).first ?? [:]
        let token = event["reply"] as? String ?? ""
        #expect(event["event"] as? String == "math.double")
        #expect(event["data"] as? Int == 21)
        #expect(harness.frames(b).first?["reply"] as? String == token, "every subscriber sees the same token")
        harness.send(b, #"{"op":"reply","to":"\#(token)","data":{"n":42}}"#)
        #expect(harness.lines(asker) == [#"{"ok":"req","rid":"q1","from":"c3","data":{"n":42}}"#])
        #expect(harness.lines(b).isEmpty, "reply is fire-and-forget")
        let late = harness.request(a, #"{"op":"reply","to":"\#(token)","data":0,"rid":7}"#)
        #expect(late["ok"] as? String == "reply")
        #expect(late["delivered"] as? Bool == false)
        #expect(harness.lines(asker).isEmpty, "a later reply is dropped")
        #expect(stats(harness, asker)["requests"] as? Int == 0)
    }

    @Test func tokensAre128RandomBitsPerRequest() {
        let harness = BrokerHarness()
        let asker = harness.connect()
        let s = harness.connect()
        harness.subscribe(s, #""ch":"q""#)
        for _ in 0..<50 { harness.send(asker, #"{"op":"req","ch":"q"}"#) }
        let tokens = harness.frames(s).compactMap { $0["reply"] as? String }
        #expect(tokens.count == 50)
        #expect(Set(tokens).count == 50)
        #expect(tokens.allSatisfy { $0.count == 32 && $0.allSatisfy { "0123456789abcdef".contains($0) } })
    }

    @Test func injectedSourceMakesTokensRepeatable() {
        var state: UInt64 = 0
        let broker = Broker(config: BrokerConfig(), now: 0, wallClock: { 0 }, randomWord: {
            state &+= 1
            return state
        })
        let harness = BrokerHarness(broker: broker)
        let asker = harness.connect()
        let s = harness.connect()
        harness.subscribe(s, #""ch":"q""#)
        harness.send(asker, #"{"op":"req","ch":"q"}"#)
        #expect(harness.frames(s).first?["reply"] as? String == "00000000000000010000000000000002")
    }

    @Test func noSubscriberIsNoRespondersAtOnce() {
        let harness = BrokerHarness()
        let asker = harness.connect()
        let answer = harness.request(asker, #"{"op":"req","ch":"nobody.home","rid":3}"#)
        #expect(answer["error"] as? String == "no_responders")
        #expect(answer["op"] as? String == "req")
        #expect(answer["rid"] as? Int == 3)
        #expect(stats(harness, asker)["timers"] as? Int == 0)
    }

    @Test func allSubscribersLockedIsNoResponders() {
        let harness = BrokerHarness()
        let asker = harness.connect()
        let s = harness.connect()
        harness.subscribe(s, #""ch":"q""#)
        _ = harness.request(s, #"{"op":"lock","ch":"q"}"#)
        #expect(harness.request(asker, #"{"op":"req","ch":"q"}"#)["error"] as? String == "no_responders")
    }

    @Test func unansweredRequestTimesOutAfterTimeoutMs() {
        let harness = BrokerHarness()
        let asker = harness.connect()
        let s = harness.connect()
        harness.subscribe(s, #""ch":"q""#)
        harness.now = 100
        harness.send(asker, #"{"op":"req","ch":"q","timeout_ms":50,"rid":"t"}"#)
        #expect(harness.broker.nextDeadline == 150)
        harness.broker.fireDeadlines(now: 149)
        #expect(harness.lines(asker).isEmpty)
        harness.broker.fireDeadlines(now: 150)
        let answer = harness.frames(asker)
        #expect(answer.first?["error"] as? String == "timeout")
        #expect(answer.first?["rid"] as? String == "t")
        #expect(answer.first?["op"] as? String == "req")
        #expect(harness.broker.nextDeadline == nil)
        let token = harness.frames(s).first?["reply"] as? String ?? ""
        harness.send(s, #"{"op":"reply","to":"\#(token)","data":1}"#)
        #expect(harness.lines(asker).isEmpty, "a reply after the timeout is ignored")
    }

    @Test func defaultTimeoutIsOneSecondAndTickFiresDeadlines() {
        let harness = BrokerHarness()
        let asker = harness.connect()
        let s = harness.connect()
        harness.subscribe(s, #""ch":"q""#)
        harness.send(asker, #"{"op":"req","ch":"q"}"#)
        #expect(harness.broker.nextDeadline == 1_000)
        _ = harness.broker.tick(now: 1_000)
        #expect(harness.frames(asker).first?["error"] as? String == "timeout")
    }

    @Test func queueGroupLoadBalancesRequests() {
        let harness = BrokerHarness()
        let asker = harness.connect()
        let w1 = harness.connect()
        let w2 = harness.connect()
        harness.subscribe(w1, #""ch":"jobs","group":"workers""#)
        harness.subscribe(w2, #""ch":"jobs","group":"workers""#)
        for _ in 0..<4 { harness.send(asker, #"{"op":"req","ch":"jobs"}"#) }
        #expect(harness.frames(w1).count == 2)
        #expect(harness.frames(w2).count == 2)
    }

    @Test func requesterThatDisconnectsLeavesNothingBehind() {
        let harness = BrokerHarness()
        let asker = harness.connect()
        let s = harness.connect()
        harness.subscribe(s, #""ch":"q""#)
        for _ in 0..<10 { harness.send(asker, #"{"op":"req","ch":"q","timeout_ms":60000}"#) }
        let token = harness.frames(s).first?["reply"] as? String ?? ""
        #expect(stats(harness, s)["requests"] as? Int == 10)
        harness.broker.disconnect(asker)
        let after = stats(harness, s)
        #expect(after["requests"] as? Int == 0)
        #expect(after["timers"] as? Int == 0)
        #expect(harness.request(s, #"{"op":"reply","to":"\#(token)","rid":1}"#)["delivered"] as? Bool == false)
    }

    @Test func tenThousandRequestsWithOneMillisecondTimeoutsLeaveNoTimersOrRequests() {
        let harness = BrokerHarness()
        let asker = harness.connect()
        let s = harness.connect()
        harness.subscribe(s, #""ch":"q""#)
        for n in 0..<10_000 { harness.send(asker, #"{"op":"req","ch":"q","timeout_ms":1,"rid":\#(n)}"#) }
        _ = harness.lines(s)
        let busy = stats(harness, s)
        #expect(busy["requests"] as? Int == 10_000)
        #expect(busy["timers"] as? Int == 10_000)
        harness.broker.fireDeadlines(now: 1)
        let timeouts = harness.frames(asker)
        #expect(timeouts.count == 10_000)
        #expect(timeouts.allSatisfy { $0["error"] as? String == "timeout" })
        #expect(timeouts.last?["rid"] as? Int == 9_999, "equal deadlines fire in request order")
        let idle = stats(harness, s)
        #expect(idle["requests"] as? Int == 0)
        #expect(idle["timers"] as? Int == 0)
        #expect(harness.broker.nextDeadline == nil)
    }

    @Test(arguments: [
        (#"{"op":"req"}"#, "missing_field"),
        (#"{"op":"req","ch":"a.*"}"#, "bad_channel"),
        (#"{"op":"req","ch":"$sys.x"}"#, "forbidden"),
        (#"{"op":"req","ch":"a","timeout_ms":0}"#, "bad_field"),
        (#"{"op":"req","ch":"a","timeout_ms":3600001}"#, "bad_field"),
        (#"{"op":"req","ch":"a","timeout_ms":"5"}"#, "bad_field"),
        (#"{"op":"reply"}"#, "missing_field"),
        (#"{"op":"reply","to":5}"#, "bad_field"),
    ])
    func badRequestsAndRepliesAreRefused(line: String, code: String) {
        let harness = BrokerHarness()
        let s = harness.connect()
        #expect(harness.request(s, line)["error"] as? String == code, "\(line)")
    }

    @Test func replyToAnUnknownOrMalformedTokenIsIgnored() {
        let harness = BrokerHarness()
        let s = harness.connect()
        harness.send(s, #"{"op":"reply","to":"not-a-token","data":1}"#)
        harness.send(s, #"{"op":"reply","to":"0123456789abcdef0123456789abcdef"}"#)
        #expect(harness.lines(s).isEmpty)
    }
}

/// The deadline heap on its own.
@Suite struct DeadlineQueueTests {
    @Test func cancelledDeadlinesAreRemovedAndOrderHolds() {
        let harness = BrokerHarness()
        let asker = harness.connect()
        let s = harness.connect()
        harness.subscribe(s, #""ch":"q""#)
        for timeout in [30, 10, 20, 10, 40] {
            harness.send(asker, #"{"op":"req","ch":"q","timeout_ms":\#(timeout),"rid":\#(timeout)}"#)
        }
        let tokens = harness.frames(s).compactMap { $0["reply"] as? String }
        harness.send(s, #"{"op":"reply","to":"\#(tokens[1])"}"#)
        _ = harness.lines(asker)
        #expect(harness.broker.nextDeadline == 10)
        var fired: [Int] = []
        for now in stride(from: 0, through: 40, by: 5) {
            harness.broker.fireDeadlines(now: now)
            fired += harness.frames(asker).compactMap { $0["rid"] as? Int }
        }
        #expect(fired == [10, 20, 30, 40])
    }
}
