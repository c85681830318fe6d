import Foundation
import Testing
import HeraldBroker

/// `max_connections`, `max_subs`, `max_channels`: past a cap the answer is `limit`, nothing
/// changes, and the connection and the daemon go on.
@Suite struct LimitTests {
    private func config(_ change: (inout BrokerConfig) -> Void) -> BrokerConfig {
        var config = BrokerConfig(epoch: "e")
        change(&config)
        return config
    }

    @Test func connectionPastMaxConnectionsGetsLimitAndCloses() {
        let harness = BrokerHarness(config { $0.maxConnections = 2 })
        let first = harness.connect()
        _ = harness.connect()
        let third = harness.broker.connect(id: 99, now: 0)
        let frames = harness.frames(third)
        #expect(frames.count == 1)
        #expect(frames.first?["error"] as? String == "limit")
        #expect(third.closeAfterFlush)
        #expect(harness.request(first, #"{"op":"ping"}"#)["pong"] != nil, "the others go on")
        #expect(harness.request(first, #"{"op":"stats"}"#)["connections"] as? Int == 3, "until it closes")
        harness.broker.disconnect(third)
        harness.broker.disconnect(first)
        let fourth = harness.broker.connect(id: 100, now: 0)
        #expect(harness.frames(fourth).first?["info"] != nil, "a freed place can be taken")
    }

    @Test func subscriptionPastMaxSubsIsLimitButReplacingIsFine() {
        let harness = BrokerHarness(config { $0.maxSubs = 2 })
        let s = harness.connect()
        harness.subscribe(s, #""ch":"a","sub":"one""#)
        harness.subscribe(s, #""ch":"b","sub":"two""#)
        #expect(harness.subscribe(s, #""ch":"c","sub":"three""#)["error"] as? String == "limit")
        #expect(harness.subscribe(s, #""ch":"c","sub":"two""#)["ok"] as? String == "sub", "replacing a name")
        #expect(harness.request(s, #"{"op":"unsub","sub":"one"}"#)["count"] as? Int == 1)
        #expect(harness.subscribe(s, #""ch":"d","sub":"three""#)["ok"] as? String == "sub")
        #expect((harness.request(s, #"{"op":"subs"}"#)["subs"] as? [Any])?.count == 2)
    }

    @Test func newChannelPastMaxChannelsIsLimitForPubStateAndDeclare() {
        let harness = BrokerHarness(config { $0.maxChannels = 2 })
        let s = harness.connect()
        #expect(harness.request(s, #"{"op":"pub","ch":"a","rid":1}"#)["ok"] as? String == "pub")
        #expect(harness.request(s, #"{"op":"set","ch":"b","value":1,"rid":2}"#)["ok"] as? String == "set")
        #expect(harness.request(s, #"{"op":"pub","ch":"c","rid":3}"#)["error"] as? String == "limit")
        #expect(harness.request(s, #"{"op":"set","ch":"c","value":1}"#)["error"] as? String == "limit")
        #expect(harness.request(s, #"{"op":"declare","ch":"c"}"#)["error"] as? String == "limit")
        #expect(harness.request(s, #"{"op":"pub","ch":"a","rid":4}"#)["seq"] as? Int == 2, "known channels go on")
        #expect(harness.request(s, #"{"op":"get","ch":"c"}"#)["ok"] as? String == "get", "reading creates nothing")
    }

    @Test func requestsPastMaxRequestsAreLimitUntilOneEnds() {
        let harness = BrokerHarness(config { $0.maxRequests = 2 })
        let responder = harness.connect()
        harness.subscribe(responder, #""ch":"svc""#)
        let asker = harness.connect()
        harness.send(asker, #"{"op":"req","ch":"svc","timeout_ms":100}"#)
        harness.send(asker, #"{"op":"req","ch":"svc","timeout_ms":100}"#)
        #expect(harness.lines(asker).isEmpty)
        #expect(harness.request(asker, #"{"op":"req","ch":"svc","timeout_ms":100}"#)["error"] as? String == "limit")
        let token = harness.frames(responder).first?["reply"] as? String ?? ""
        harness.send(responder, #"{"op":"reply","to":"\#(token)","data":1}"#)
        #expect(harness.frames(asker).first?["ok"] as? String == "req")
        harness.send(asker, #"{"op":"req","ch":"svc","timeout_ms":100}"#)
        #expect(harness.lines(asker).isEmpty, "a place was freed")
    }

    @Test func signalsPastMaxSignalsAreLimitUntilOneEnds() {
        let harness = BrokerHarness(config { $0.maxSignals = 1 })
        let handler = harness.connect()
        harness.subscribe(handler, #""ch":"ui","sub":"h","handle":true"#)
        let sender = harness.connect()
        harness.send(sender, #"{"op":"signal","ch":"ui"}"#)
        #expect(harness.request(sender, #"{"op":"signal","ch":"ui"}"#)["error"] as? String == "limit")
        let id = harness.frames(handler).first?["id"] as? String ?? ""
        harness.send(handler, #"{"op":"handled","id":"\#(id)","action":"stop"}"#)
        #expect(harness.frames(sender).first?["ok"] as? String == "signal")
        #expect(harness.request(sender, #"{"op":"signal","ch":"nobody"}"#)["ok"] as? String == "signal")
    }
}
