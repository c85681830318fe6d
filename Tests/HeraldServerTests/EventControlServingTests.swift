import Foundation
import Testing

/// Locks, instance channels, request/reply and `$sys` events through the real daemon.
@Suite struct EventControlServingTests {
    /// The next frame that is not one of `skipping` kinds (e.g. `$sys` events).
    private func frame(_ client: TestClient, where accept: ([String: Any]) -> Bool) throws -> [String: Any] {
        while true {
            let next = try client.frame()
            if accept(next) { return next }
        }
    }

    @Test func lockerDisconnectReleasesItsLockOverTheWire() throws {
        let daemon = try DaemonProcess()
        let subscriber = try daemon.client()
        let publisher = try daemon.client()
        var locker: TestClient? = try daemon.client()
        #expect(try subscriber.request(#"{"op":"sub","ch":"$sys.client.disconnected","sub":"sys"}"#)["ok"] as? String == "sub")
        #expect(try subscriber.request(#"{"op":"sub","ch":"cars.*","sub":"cars"}"#)["ok"] as? String == "sub")
        let locked = try locker?.request(#"{"op":"lock","ch":"cars.42"}"#)
        #expect(locked?["subs"] as? [String] != nil)
        #expect(try publisher.request(#"{"op":"pub","ch":"cars.42","rid":1}"#)["receivers"] as? Int == 0)
        locker = nil
        let gone = try frame(subscriber) { $0["event"] as? String == "$sys.client.disconnected" }
        #expect((gone["data"] as? [String: Any])?["client"] as? String != nil)
        #expect(try publisher.request(#"{"op":"pub","ch":"cars.42","data":7,"rid":2}"#)["receivers"] as? Int == 1)
        #expect(try subscriber.frame()["data"] as? Int == 7)
        #expect(try publisher.request(#"{"op":"stats"}"#)["locks"] as? Int == 0)
    }

    @Test func ownerDisconnectRemovesTheInstanceChannelOverTheWire() throws {
        let daemon = try DaemonProcess()
        let subscriber = try daemon.client()
        var owner: TestClient? = try daemon.client()
        #expect(try owner?.request(#"{"op":"declare","ch":"car.42.moved"}"#)["ok"] as? String == "declare")
        _ = try subscriber.request(#"{"op":"sub","ch":"car.42.moved","sub":"s4"}"#)
        let listed = try subscriber.request(#"{"op":"channels","ch":"car.>"}"#)["channels"] as? [[String: Any]]
        #expect((listed?.first?["owner"] as? String)?.hasPrefix("c") == true)
        owner = nil
        let removed = try subscriber.frame()
        #expect(removed["removed"] as? String == "car.42.moved")
        #expect(removed["sub"] as? String == "s4")
        #expect(try subscriber.request(#"{"op":"stats"}"#)["instance_channels"] as? Int == 0)
    }

    @Test func requestReachesResponderAndReplyReachesRequester() throws {
        let daemon = try DaemonProcess()
        let responder = try daemon.client()
        let requester = try daemon.client()
        _ = try responder.request(#"{"op":"sub","ch":"math.double","group":"workers"}"#)
        requester.send(#"{"op":"req","ch":"math.double","data":21,"rid":"q"}"#)
        let event = try responder.frame()
        let token = try #require(event["reply"] as? String)
        responder.send(#"{"op":"reply","to":"\#(token)","data":42}"#)
        let answer = try requester.frame()
        #expect(answer["ok"] as? String == "req")
        #expect(answer["rid"] as? String == "q")
        #expect(answer["data"] as? Int == 42)
        let none = try requester.request(#"{"op":"req","ch":"nobody","rid":2}"#)
        #expect(none["error"] as? String == "no_responders")
    }

    @Test func tenThousandRequestsWithOneMillisecondTimeoutsLeaveNoTimersBehind() throws {
        let daemon = try DaemonProcess()
        let responder = try daemon.client()
        let requester = try daemon.client()
        _ = try responder.request(#"{"op":"sub","ch":"silent"}"#)
        let count = 10_000
        let batch = (0..<count).map { #"{"op":"req","ch":"silent","timeout_ms":1,"rid":\#($0)}"# }
        requester.send(batch.joined(separator: "\n"))
        var timeouts = 0
        for _ in 0..<count where try requester.frame(timeout: 30)["error"] as? String == "timeout" { timeouts += 1 }
        #expect(timeouts == count)
        let stats = try requester.request(#"{"op":"stats"}"#)
        #expect(stats["requests"] as? Int == 0)
        #expect(stats["timers"] as? Int == 0)
    }

    @Test func requestTimeoutFiresWhenHeartbeatsAreOff() throws {
        // With heartbeats off the timer has no scan to do; it must still be armed for the
        // request's deadline.
        let daemon = try DaemonProcess(config: "heartbeat_ms: 0")
        let responder = try daemon.client()
        let requester = try daemon.client()
        _ = try responder.request(#"{"op":"sub","ch":"slow"}"#)
        let answer = try requester.request(#"{"op":"req","ch":"slow","timeout_ms":20,"rid":1}"#)
        #expect(answer["error"] as? String == "timeout")
        #expect(answer["rid"] as? Int == 1)
    }

    @Test func systemEventsAnnounceClientsAndAreReadOnly() throws {
        let daemon = try DaemonProcess()
        let watcher = try daemon.client()
        _ = try watcher.request(#"{"op":"sub","ch":"$sys.client.>"}"#)
        var visitor: TestClient? = try daemon.client()
        _ = try visitor?.request(#"{"op":"hello","name":"visitor"}"#)
        #expect(try visitor?.request(#"{"op":"pub","ch":"$sys.client.connected"}"#)["error"] as? String == "forbidden")
        visitor = nil
        let connected = try watcher.frame()
        #expect(connected["event"] as? String == "$sys.client.connected")
        #expect(connected["from"] as? String == "c0")
        let disconnected = try watcher.frame()
        #expect(disconnected["event"] as? String == "$sys.client.disconnected")
        #expect((disconnected["data"] as? [String: Any])?["name"] as? String == "visitor")
    }
}
