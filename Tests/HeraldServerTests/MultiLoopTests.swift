import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Several loops (`--workers`): connections spread over loops still see one broker.
@Suite struct MultiLoopTests {
    @Test func eventsCrossLoopsInPublishOrderWithoutLoss() throws {
        let daemon = try DaemonProcess(arguments: ["--workers", "2"])
        let subscribers = try (0..<4).map { _ in try daemon.client() }
        for subscriber in subscribers { _ = try subscriber.request(#"{"op":"sub","ch":"loops.x"}"#) }
        let publisher = try daemon.client()
        let count = 5_000
        let batch = (1...count).map { #"{"op":"pub","ch":"loops.x","data":\#($0)}"# }.joined(separator: "\n") + "\n"
        publisher.send(bytes: Array(batch.utf8))
        for subscriber in subscribers {
            var expected = 1
            while expected <= count {
                let frame = try subscriber.frame(timeout: 10)
                #expect(frame["data"] as? Int == expected)
                #expect(frame["seq"] as? Int == expected)
                expected += 1
            }
        }
        let stats = try publisher.request(#"{"op":"stats"}"#)
        #expect(stats["msgs_out"] as? Int == 4 * count)
        #expect(stats["connections"] as? Int == 5)
    }

    @Test func sigtermStopsEveryLoopAndExitsZero() throws {
        let daemon = try DaemonProcess(arguments: ["--workers", "3"])
        let clients = try (0..<6).map { _ in try daemon.client() }
        daemon.signal(SIGTERM)
        for client in clients { #expect(try client.frame()["error"] as? String == "shutting_down") }
        #expect(daemon.waitForExit(seconds: 10) == 0)
    }

    @Test func disconnectOnOneLoopEndsItsSubscriptionsForAll() throws {
        let daemon = try DaemonProcess(arguments: ["--workers", "2"])
        let leaving = try daemon.client()
        let staying = try daemon.client()
        _ = try leaving.request(#"{"op":"sub","ch":"gone"}"#)
        _ = try staying.request(#"{"op":"sub","ch":"gone"}"#)
        leaving.closeNow()
        let deadline = Date().addingTimeInterval(5)
        while Date() < deadline, try staying.request(#"{"op":"stats"}"#)["connections"] as? Int != 1 {
            usleep(20_000)
        }
        staying.send(#"{"op":"pub","ch":"gone","data":1,"rid":2}"#)
        let event = try staying.frame()
        let receipt = try staying.frame()
        #expect(event["event"] as? String == "gone")
        #expect(receipt["receivers"] as? Int == 1)
    }

    /// Regression: a connection asked to flush by two loops in one pass had its single
    /// `uv_write` request queued twice, which hung the loop when it was closed.
    @Test func slowConsumerOnAnotherLoopIsCutOffRepeatedlyAndDaemonServes() throws {
        let daemon = try DaemonProcess(config: "max_pending: 4194304", arguments: ["--workers", "2"])
        let payload = String(repeating: "z", count: 200)
        let batch = String(repeating: #"{"op":"pub","ch":"flood","data":"\#(payload)"}"# + "\n", count: 500)
        for _ in 0..<3 {
            let slow = try daemon.client()
            _ = try slow.request(#"{"op":"sub","ch":"flood"}"#)
            let publisher = try daemon.client()
            for _ in 0..<300 { publisher.send(bytes: Array(batch.utf8)) }
            #expect(try publisher.request(#"{"op":"ping","rid":"alive"}"#)["rid"] as? String == "alive")
            // The error frame itself may be dropped when the peer reads nothing within the
            // 2 s close grace (a loaded machine); that the daemon cut it off is what counts.
            #expect(slow.isClosedByPeer(timeout: 10))
        }
        let fresh = try daemon.client()
        #expect(try fresh.request(#"{"op":"stats"}"#)["slow_consumers"] as? Int == 3)
    }

    /// A request made on a loop other than the timer's still times out on time: that loop
    /// asks the main loop to re-arm its one timer for the earlier deadline.
    @Test func requestTimeoutFromAnotherLoopFiresOnTime() throws {
        let daemon = try DaemonProcess(config: "heartbeat_ms: 0", arguments: ["--workers", "2"])
        let requester = try daemon.client()  // connection 1: the second loop
        let silent = try daemon.client()     // connection 2: the main loop
        _ = try silent.request(#"{"op":"sub","ch":"svc.slow"}"#)
        let started = Date()
        let answer = try requester.request(#"{"op":"req","ch":"svc.slow","timeout_ms":50,"rid":1}"#)
        #expect(answer["error"] as? String == "timeout")
        #expect(Date().timeIntervalSince(started) < 0.9, "the 1 s heartbeat scan must not be what fires it")
        #expect(try silent.frame()["reply"] != nil)
    }
}
