import Foundation
import Testing
import HeraldBroker

/// Responder-chain signals (issue 5): routing, verdicts, callbacks, faults, links.
@Suite struct SignalTests {
    /// A harness with a sender and handlers subscribed with `handle:true`.
    private func handler(_ harness: BrokerHarness, _ pattern: String, name: String) -> Session {
        let session = harness.connect()
        let ok = harness.subscribe(session, #""ch":"\#(pattern)","sub":"\#(name)","handle":true"#)
        #expect(ok["ok"] as? String == "sub")
        return session
    }

    private func offer(_ harness: BrokerHarness, _ session: Session) -> [String: Any]? {
        harness.frames(session).first { $0["signal"] != nil }
    }

    private func verdict(_ harness: BrokerHarness, _ session: Session, _ id: Any?, _ action: String) {
        harness.send(session, #"{"op":"handled","id":"\#(id ?? "")","action":"\#(action)"}"#)
    }

    @Test func bubblesThroughThreeLevelsPassPassStop() {
        let harness = BrokerHarness()
        let sender = harness.connect()
        let profile = handler(harness, "app.settings.profile", name: "p")
        let settings = handler(harness, "app.settings", name: "s")
        let app = handler(harness, "app", name: "a")
        harness.send(sender, #"{"op":"signal","ch":"app.settings.profile","data":{"k":1},"tag":7,"rid":"x"}"#)
        let first = offer(harness, profile)
        #expect(first?["signal"] as? String == "app.settings.profile")
        #expect(first?["origin"] as? String == "app.settings.profile")
        #expect(first?["tag"] as? Int == 7)
        #expect((first?["data"] as? [String: Int])?["k"] == 1)
        verdict(harness, profile, first?["id"], "pass")
        let second = offer(harness, settings)
        #expect(second?["signal"] as? String == "app.settings")
        verdict(harness, settings, second?["id"], "pass")
        let third = offer(harness, app)
        #expect(third?["signal"] as? String == "app")
        #expect(harness.lines(sender).isEmpty, "no result before the route ends")
        verdict(harness, app, third?["id"], "stop")
        let result = harness.frames(sender).first
        #expect(result?["ok"] as? String == "signal")
        #expect(result?["rid"] as? String == "x")
        #expect(result?["handled_by"] as? String == "c4/a")
        #expect(result?["at"] as? String == "app")
        #expect(result?["hops"] as? Int == 3)
        #expect((result?["timeouts"] as? [Any])?.isEmpty == true)
    }

    @Test func handlersOnOneLevelAreAskedInSubscriptionOrderAndStopEndsTheRoute() {
        let harness = BrokerHarness()
        let sender = harness.connect()
        let first = handler(harness, "ui.menu", name: "one")
        let second = handler(harness, "ui.menu", name: "two")
        let parent = handler(harness, "ui", name: "up")
        harness.send(sender, #"{"op":"signal","ch":"ui.menu"}"#)
        let offered = offer(harness, first)
        #expect(harness.lines(second).isEmpty, "one handler at a time")
        verdict(harness, first, offered?["id"], "pass")
        verdict(harness, second, offer(harness, second)?["id"], "stop")
        #expect(harness.lines(parent).isEmpty)
        #expect(harness.frames(sender).first?["handled_by"] as? String == "c3/two")
    }

    @Test func wildcardHandlersMatchTheirLevel() {
        let harness = BrokerHarness()
        let sender = harness.connect()
        let star = handler(harness, "app.*", name: "any")
        harness.send(sender, #"{"op":"signal","ch":"app.settings.profile"}"#)
        let offered = offer(harness, star)
        #expect(offered?["signal"] as? String == "app.settings")
        verdict(harness, star, offered?["id"], "stop")
        #expect(harness.frames(sender).first?["at"] as? String == "app.settings")
    }

    @Test func plainSubscriptionsNeverSeeSignalsAndHandlersNeverSeeEvents() {
        let harness = BrokerHarness()
        let sender = harness.connect()
        let plain = harness.connect()
        harness.subscribe(plain, #""ch":"app.>""#)
        let handling = handler(harness, "app.x", name: "h")
        harness.send(sender, #"{"op":"signal","ch":"app.x"}"#)
        #expect(harness.lines(plain).isEmpty)
        verdict(harness, handling, offer(harness, handling)?["id"], "pass")
        _ = harness.frames(sender)
        let receipt = harness.request(sender, #"{"op":"pub","ch":"app.x","rid":1}"#)
        #expect(receipt["receivers"] as? Int == 1)
        #expect(harness.lines(handling).isEmpty)
    }

    @Test func callbacksReachTheSenderInOrderBeforeTheResult() {
        let harness = BrokerHarness()
        let sender = harness.connect()
        let handling = handler(harness, "doc", name: "h")
        harness.send(sender, #"{"op":"signal","ch":"doc.save"}"#)
        let id = offer(harness, handling)?["id"] as? String ?? ""
        for n in 1...3 { harness.send(handling, #"{"op":"callback","id":"\#(id)","data":\#(n)}"#) }
        verdict(harness, handling, id, "stop")
        let frames = harness.frames(sender)
        #expect(frames.map { $0["callback"] != nil ? "cb\($0["data"] ?? "")" : "\($0["ok"] ?? "")" } == ["cb1", "cb2", "cb3", "signal"])
        #expect(frames.first?["from"] as? String == "c2")
        let late = harness.request(handling, #"{"op":"callback","id":"\#(id)","data":4}"#)
        #expect(late["error"] as? String == "not_found", "callback after the end")
    }

    @Test func silentHandlerTimesOutAndCountsAsPass() {
        let harness = BrokerHarness()
        let sender = harness.connect()
        let slow = handler(harness, "a.b", name: "slow")
        let parent = handler(harness, "a", name: "up")
        harness.send(sender, #"{"op":"signal","ch":"a.b","timeout_ms":50}"#)
        let id = offer(harness, slow)?["id"]
        harness.now = 49
        harness.broker.fireDeadlines(now: 49)
        #expect(harness.lines(parent).isEmpty)
        harness.now = 50
        harness.broker.fireDeadlines(now: 50)
        verdict(harness, parent, offer(harness, parent)?["id"], "pass")
        let result = harness.frames(sender).first
        #expect(result.map { $0["handled_by"] is NSNull } == true, "unhandled")
        #expect(result.map { $0["at"] is NSNull } == true)
        #expect(result?["timeouts"] as? [String] == ["c2/slow"])
        #expect(result?["hops"] as? Int == 2)
        verdict(harness, slow, id, "stop")
        #expect(harness.lines(slow).isEmpty, "a late verdict is ignored, not an error")
        #expect(harness.lines(sender).isEmpty)
    }

    @Test func handlerThatDisconnectsMidOfferCountsAsPass() {
        let harness = BrokerHarness()
        let sender = harness.connect()
        let leaving = handler(harness, "x.y", name: "gone")
        let next = handler(harness, "x", name: "next")
        harness.send(sender, #"{"op":"signal","ch":"x.y"}"#)
        _ = offer(harness, leaving)
        harness.broker.disconnect(leaving)
        verdict(harness, next, offer(harness, next)?["id"], "stop")
        let result = harness.frames(sender).first
        #expect(result?["timeouts"] as? [String] == ["c2/gone"])
        #expect(result?["handled_by"] as? String == "c3/next")
    }

    @Test func verdictForAnIdNeverOfferedIsNotFound() {
        let harness = BrokerHarness()
        let sender = harness.connect()
        let handling = handler(harness, "q", name: "h")
        let stranger = harness.connect()
        harness.send(sender, #"{"op":"signal","ch":"q"}"#)
        let id = offer(harness, handling)?["id"] as? String ?? ""
        #expect(harness.request(stranger, #"{"op":"handled","id":"\#(id)","action":"stop"}"#)["error"] as? String == "not_found")
        #expect(harness.request(stranger, #"{"op":"handled","id":"g999","action":"stop"}"#)["error"] as? String == "not_found")
        #expect(harness.request(handling, #"{"op":"handled","id":"\#(id)","action":"maybe"}"#)["error"] as? String == "bad_field")
        verdict(harness, handling, id, "stop")
        #expect(harness.frames(sender).first?["handled_by"] as? String == "c2/h")
    }

    @Test func lockedHandlerIsSkipped() {
        let harness = BrokerHarness()
        let sender = harness.connect()
        let locked = handler(harness, "m", name: "locked")
        let open = handler(harness, "m", name: "open")
        #expect(harness.request(locked, #"{"op":"lock","sub":"locked"}"#)["ok"] as? String == "lock")
        harness.send(sender, #"{"op":"signal","ch":"m"}"#)
        #expect(harness.lines(locked).isEmpty)
        verdict(harness, open, offer(harness, open)?["id"], "stop")
        #expect(harness.frames(sender).first?["hops"] as? Int == 1)
    }

    @Test func unhandledSignalEndsWithNull() {
        let harness = BrokerHarness()
        let sender = harness.connect()
        let result = harness.request(sender, #"{"op":"signal","ch":"nobody.home"}"#)
        #expect(result["ok"] as? String == "signal")
        #expect(result["handled_by"] is NSNull)
        #expect(result["hops"] as? Int == 0)
    }

    @Test func linkOverridesTheNextLevelAndCyclesAreRefused() {
        let harness = BrokerHarness()
        let sender = harness.connect()
        let below = handler(harness, "nav.list", name: "list")
        let natural = handler(harness, "nav", name: "nav")
        #expect(harness.request(sender, #"{"op":"link","ch":"nav.detail","parent":"nav.list"}"#)["ok"] as? String == "link")
        harness.send(sender, #"{"op":"signal","ch":"nav.detail"}"#)
        let offered = offer(harness, below)
        #expect(offered?["signal"] as? String == "nav.list")
        verdict(harness, below, offered?["id"], "pass")
        verdict(harness, natural, offer(harness, natural)?["id"], "pass")
        #expect(harness.frames(sender).first?["hops"] as? Int == 2)
        #expect(harness.request(sender, #"{"op":"link","ch":"nav.list","parent":"nav.detail"}"#)["error"] as? String == "cycle")
        #expect(harness.request(sender, #"{"op":"link","ch":"nav","parent":"nav.detail"}"#)["error"] as? String == "cycle")
        #expect(harness.request(sender, #"{"op":"link","ch":"a","parent":"a"}"#)["error"] as? String == "cycle")
        let listed = harness.request(sender, #"{"op":"channels","ch":"nav.detail"}"#)["channels"] as? [[String: Any]]
        #expect(listed?.first?["link"] as? String == "nav.list")
    }

    @Test func linkBelongsToItsConnectionAndGoesWithIt() {
        let harness = BrokerHarness()
        let linker = harness.connect()
        let other = harness.connect()
        _ = harness.request(linker, #"{"op":"link","ch":"p.q","parent":"z"}"#)
        #expect(harness.request(other, #"{"op":"link","ch":"p.q","parent":"y"}"#)["error"] as? String == "conflict")
        #expect(harness.request(other, #"{"op":"unlink","ch":"p.q"}"#)["error"] as? String == "forbidden")
        harness.broker.disconnect(linker)
        #expect(harness.request(other, #"{"op":"stats"}"#)["links"] as? Int == 0)
        #expect(harness.request(other, #"{"op":"link","ch":"p.q","parent":"y"}"#)["ok"] as? String == "link")
        #expect(harness.request(other, #"{"op":"unlink","ch":"p.q"}"#)["ok"] as? String == "unlink")
        #expect(harness.request(other, #"{"op":"unlink","ch":"p.q"}"#)["error"] as? String == "not_found")
    }

    @Test func senderThatLeavesEndsItsSignalsAndFreesEverything() {
        let harness = BrokerHarness()
        let sender = harness.connect()
        let handling = handler(harness, "s", name: "h")
        harness.send(sender, #"{"op":"signal","ch":"s"}"#)
        let id = offer(harness, handling)?["id"]
        harness.broker.disconnect(sender)
        verdict(harness, handling, id, "stop")
        let stats = harness.request(handling, #"{"op":"stats"}"#)
        #expect(stats["signals"] as? Int == 0)
        #expect(stats["timers"] as? Int == 0)
    }

    @Test func thousandConcurrentSignalsThroughOneHandlerAllResolveAndNothingLeaks() {
        let harness = BrokerHarness()
        let senders = (0..<10).map { _ in harness.connect() }
        let handling = handler(harness, "busy", name: "h")
        for n in 0..<1000 { harness.send(senders[n % 10], #"{"op":"signal","ch":"busy.x","data":\#(n)}"#) }
        var offers = harness.frames(handling).filter { $0["signal"] != nil }
        #expect(offers.count == 1000, "each signal is offered at once: the handler is free for each")
        #expect(offers.compactMap { $0["data"] as? Int } == Array(0..<1000), "offers arrive in order")
        for (n, offered) in offers.enumerated() { verdict(harness, handling, offered["id"], n % 2 == 0 ? "stop" : "pass") }
        offers.removeAll()
        let results = senders.flatMap { harness.frames($0) }.filter { $0["ok"] as? String == "signal" }
        #expect(results.count == 1000)
        let stats = harness.request(handling, #"{"op":"stats"}"#)
        #expect(stats["signals"] as? Int == 0)
        #expect(stats["timers"] as? Int == 0)
    }

    @Test func handlerMaxCountsOffers() {
        let harness = BrokerHarness()
        let sender = harness.connect()
        let once = harness.connect()
        harness.subscribe(once, #""ch":"o","sub":"h","handle":true,"once":true"#)
        harness.send(sender, #"{"op":"signal","ch":"o"}"#)
        let offered = offer(harness, once)
        #expect(offered?["last"] as? Bool == true)
        verdict(harness, once, offered?["id"], "stop")
        #expect(harness.frames(sender).first?["handled_by"] as? String == "c2/h")
        #expect(harness.request(sender, #"{"op":"signal","ch":"o"}"#)["hops"] as? Int == 0)
    }

    /// Found by the fuzz harness (`finishedOfferHolders` after every connection closed): a
    /// connection offered its own signal had its late-`handled` memory cleared when it left
    /// and then written again as its signal ended, under an id never used again.
    @Test func aSenderOfferedItsOwnSignalLeavesNoMemoryOfItWhenItGoes() {
        let harness = BrokerHarness()
        let both = handler(harness, "self.x", name: "h")
        harness.send(both, #"{"op":"signal","ch":"self.x","timeout_ms":60000}"#)
        #expect(offer(harness, both) != nil)
        harness.broker.disconnect(both)
        #expect(harness.broker.audit().finishedOfferHolders == 0)
    }

    /// The same through a close: a handler the broker closes stays known until the server
    /// has flushed it, and a signal it was offered that ends meanwhile must not remember it.
    @Test func aClosedHandlerIsNotRememberedBySignalsEndingBeforeItIsGone() {
        var config = BrokerConfig(epoch: "e")
        config.maxErrors = 1
        let harness = BrokerHarness(config)
        let sender = harness.connect()
        let first = handler(harness, "up.x", name: "first")
        let last = handler(harness, "up", name: "last")
        harness.send(sender, #"{"op":"signal","ch":"up.x","timeout_ms":60000}"#)
        let offered = offer(harness, first)
        verdict(harness, first, offered?["id"], "pass")
        harness.send(first, "not json")
        #expect(first.closeAfterFlush)
        let next = offer(harness, last)
        verdict(harness, last, next?["id"], "stop")
        harness.broker.disconnect(first)
        #expect(harness.broker.audit().finishedOfferHolders == 1, "only the handler still connected remembers it")
    }
}
