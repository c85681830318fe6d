import Foundation
import Testing
import HeraldBroker

/// `$sys.>` events published by the broker itself.
@Suite struct SystemEventTests {
    @Test func connectAndDisconnectAreAnnouncedWithClientIDAndName() {
        let harness = BrokerHarness()
        let watcher = harness.connect()
        harness.subscribe(watcher, #""ch":"$sys.client.>","sub":"sys""#)
        let visitor = harness.connect(name: "terminal-1")
        harness.broker.disconnect(visitor)
        let events = harness.frames(watcher)
        #expect(events.compactMap { $0["event"] as? String } == ["$sys.client.connected", "$sys.client.disconnected"])
        #expect(events.allSatisfy { $0["from"] as? String == "c0" })
        let connected = events.first?["data"] as? [String: Any]
        #expect(connected?["client"] as? String == "c2")
        #expect(connected?["name"] is NSNull, "hello comes after connect")
        let disconnected = events.last?["data"] as? [String: Any]
        #expect(disconnected?["client"] as? String == "c2")
        #expect(disconnected?["name"] as? String == "terminal-1")
    }

    @Test func closeRequestedByTheDaemonAnnouncesDisconnectOnce() {
        let harness = BrokerHarness(BrokerConfig(maxErrors: 1))
        let watcher = harness.connect()
        harness.subscribe(watcher, #""ch":"$sys.client.disconnected""#)
        let bad = harness.connect()
        harness.send(bad, "nonsense")
        harness.broker.disconnect(bad)
        let events = harness.frames(watcher).compactMap { $0["event"] as? String }
        #expect(events == ["$sys.client.disconnected"])
    }

    @Test func removedInstanceChannelIsAnnounced() {
        let harness = BrokerHarness()
        let watcher = harness.connect()
        harness.subscribe(watcher, #""ch":"$sys.channel.removed""#)
        let owner = harness.connect(name: "fleet")
        _ = harness.request(owner, #"{"op":"declare","ch":"car.1"}"#)
        _ = harness.request(owner, #"{"op":"declare","ch":"car.2"}"#)
        _ = harness.request(owner, #"{"op":"remove","ch":"car.1"}"#)
        harness.broker.disconnect(owner)
        let data = harness.frames(watcher).compactMap { $0["data"] as? [String: Any] }
        #expect(data.compactMap { $0["ch"] as? String } == ["car.1", "car.2"])
        #expect(data.compactMap { $0["reason"] as? String } == ["remove", "disconnect"])
        #expect(data.allSatisfy { $0["client"] as? String == "c2" && $0["name"] as? String == "fleet" })
    }

    @Test func slowConsumerIsAnnounced() {
        let harness = BrokerHarness(BrokerConfig(maxPending: 200))
        let watcher = harness.connect()
        harness.subscribe(watcher, #""ch":"$sys.slow_consumer""#)
        let slow = harness.connect(name: "sleepy")
        harness.subscribe(slow, #""ch":"news""#)
        _ = harness.lines(slow)
        let publisher = harness.connect()
        for _ in 0..<5 { harness.send(publisher, #"{"op":"pub","ch":"news","data":"0123456789012345678901234567890123456789"}"#) }
        let events = harness.frames(watcher)
        #expect(events.count == 1)
        let data = events.first?["data"] as? [String: Any]
        #expect(data?["client"] as? String == "c2")
        #expect(data?["name"] as? String == "sleepy")
        #expect(data?["policy"] as? String == "disconnect")
    }

    @Test func droppingSubscriptionIsAnnouncedOncePerRun() {
        let harness = BrokerHarness(BrokerConfig(maxPending: 200, overflow: .drop))
        let watcher = harness.connect()
        harness.subscribe(watcher, #""ch":"$sys.slow_consumer""#)
        let slow = harness.connect()
        harness.subscribe(slow, #""ch":"news","sub":"n""#)
        let publisher = harness.connect()
        for _ in 0..<5 { harness.send(publisher, #"{"op":"pub","ch":"news","data":"0123456789012345678901234567890123456789"}"#) }
        let data = harness.frames(watcher).compactMap { $0["data"] as? [String: Any] }
        #expect(data.count == 1)
        #expect(data.first?["policy"] as? String == "drop")
        #expect(data.first?["sub"] as? String == "n")
    }

    @Test func clientsCannotPublishRequestOrDeclareUnderDollar() {
        let harness = BrokerHarness()
        let s = harness.connect()
        for line in [
            #"{"op":"pub","ch":"$sys.client.connected"}"#, #"{"op":"req","ch":"$sys.x"}"#,
            #"{"op":"declare","ch":"$sys.x"}"#, #"{"op":"lock","ch":"$sys.client.connected"}"#,
        ] {
            #expect(harness.request(s, line)["error"] as? String == "forbidden", "\(line)")
        }
    }

    @Test func wildcardFromTheRootDoesNotSeeSystemEventsAndChannelsHidesThem() {
        let harness = BrokerHarness()
        let s = harness.connect()
        harness.subscribe(s, #""ch":">""#)
        let other = harness.connect()
        harness.broker.disconnect(other)
        #expect(harness.frames(s).isEmpty)
        let listed = harness.request(s, #"{"op":"channels"}"#)["channels"] as? [[String: Any]]
        #expect(listed?.isEmpty == true)
        #expect(harness.request(s, #"{"op":"stats"}"#)["channels"] as? Int == 0)
        let system = harness.request(s, #"{"op":"channels","ch":"$sys.>"}"#)["channels"] as? [[String: Any]] ?? []
        #expect(system.compactMap { $0["ch"] as? String } == ["$sys.client.connected", "$sys.client.disconnected"])
    }
}
