import Foundation
import HeraldTestSupport
import Testing

/// Idempotent publish (issue 37, item 4; docs/protocol.md, "Idempotent publish"): a `pub`
/// with an `id` the channel saw within `dedup_window_ms` is not delivered again, whichever
/// connection sends it; its receipt repeats the first one's with `"duplicate":true`.
@Suite struct DedupServingTests {
    private func subscriber(_ daemon: DaemonProcess, _ pattern: String) throws -> TestClient {
        let client = try daemon.client()
        #expect(try client.request(#"{"op":"sub","ch":"\#(pattern)","rid":0}"#)["ok"] as? String == "sub")
        return client
    }


    @Test func aRepeatedIdIsDeliveredOnceAcrossConnectionsButNotAcrossChannels() throws {
        let daemon = try DaemonProcess()
        let watcher = try subscriber(daemon, "orders.*")
        let first = try daemon.client()
        let second = try daemon.client()
        let sent = try first.request(#"{"op":"pub","ch":"orders.1","id":"o-17","data":1,"rid":1}"#)
        #expect(sent["seq"] as? Int == 1 && sent["receivers"] as? Int == 1 && sent["duplicate"] == nil, "\(sent)")
        let again = try second.request(#"{"op":"pub","ch":"orders.1","id":"o-17","data":2,"rid":2}"#)
        #expect(again["seq"] as? Int == 1 && again["receivers"] as? Int == 1 && again["duplicate"] as? Bool == true, "\(again)")
        first.send(#"{"op":"pub","ch":"orders.1","id":"o-17","data":3}"#)
        first.send(#"{"op":"pub","ch":"orders.2","id":"o-17","data":4}"#)
        first.send(#"{"op":"pub","ch":"orders.1","data":5}"#)
        #expect(watcher.eventData(quietFor: 0.5) == [1, 4, 5], "the same id on another channel and a pub without id go through")
    }

    @Test func anIdIsForgottenWhenItsWindowEndsAndPastTheCap() throws {
        let daemon = try DaemonProcess(config: "dedup_window_ms: 300, max_dedup_ids: 2")
        let watcher = try subscriber(daemon, "x")
        let publisher = try daemon.client()
        publisher.send(#"{"op":"pub","ch":"x","id":"a","data":1}"#)
        publisher.send(#"{"op":"pub","ch":"x","id":"a","data":2}"#)
        #expect(watcher.eventData(quietFor: 0.2) == [1])
        Thread.sleep(forTimeInterval: 0.4)
        publisher.send(#"{"op":"pub","ch":"x","id":"a","data":3}"#)
        #expect(watcher.eventData(quietFor: 0.2) == [3], "the window ended")
        publisher.send(#"{"op":"pub","ch":"x","id":"b","data":4}"#)
        publisher.send(#"{"op":"pub","ch":"x","id":"c","data":5}"#)
        publisher.send(#"{"op":"pub","ch":"x","id":"a","data":6}"#)
        publisher.send(#"{"op":"pub","ch":"x","id":"c","data":7}"#)
        #expect(watcher.eventData(quietFor: 0.2) == [4, 5, 6], "past 2 ids the oldest (a) went first; c is still known")
    }

    @Test func aBadIdIsRefusedAndTheConnectionLivesOn() throws {
        let daemon = try DaemonProcess()
        let client = try daemon.client()
        for bad in [#""""#, "7", #""\#(String(repeating: "i", count: 65))""#, "[]"] {
            let answer = try client.request(#"{"op":"pub","ch":"x","id":\#(bad),"rid":1}"#)
            #expect(answer["error"] as? String == "bad_field", "id \(bad): \(answer)")
        }
        #expect(try client.request(#"{"op":"ping","rid":2}"#)["pong"] != nil)
        #expect(try client.request(#"{"op":"pub","ch":"x","id":null,"rid":3}"#)["seq"] as? Int == 1, "null is no id")
    }
}
