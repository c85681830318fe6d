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

    /// Bytes one loop queues for a connection of another reach it by hand-off (written by
    /// its loop without the broker lock, counted at a later pass): subscribers on both loops
    /// get every event in order, more than their sockets hold at once, and `bytes_out`
    /// counts exactly the bytes the clients received.
    @Test func handedOffBytesArriveInOrderAndAreCountedExactly() throws {
        let daemon = try DaemonProcess(arguments: ["--workers", "2"])
        var received = 0
        func frame(_ client: TestClient) throws -> [String: Any] {
            let line = try client.line(timeout: 20)
            received += line.utf8.count + 1
            return try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        }
        // Connections alternate between the two loops: a subscriber on each, the
        // publisher on the first one's, so one subscriber is fed by hand-off.
        let subscribers = try (0..<2).map { _ in try TestClient(port: daemon.port) }
        let publisher = try TestClient(port: daemon.port)
        for client in subscribers + [publisher] { _ = try frame(client) }
        for subscriber in subscribers {
            subscriber.send(#"{"op":"sub","ch":"hand.x"}"#)
            #expect(try frame(subscriber)["ok"] as? String == "sub")
        }
        let count = 20_000
        let payload = String(repeating: "h", count: 200)
        let batch = (1...count).map { #"{"op":"pub","ch":"hand.x","data":"\#(payload)","rid":\#($0)}"# }.joined(separator: "\n") + "\n"
        publisher.send(bytes: Array(batch.utf8))
        // Read one subscriber to the end before the other: the other's bytes pile up past
        // its socket buffers meanwhile (5 MB), so its writes go out in parts.
        for subscriber in subscribers {
            for expected in 1...count {
                let event = try frame(subscriber)
                #expect(event["seq"] as? Int == expected)
                if event["seq"] as? Int != expected { return }
            }
        }
        for expected in 1...count { #expect(try frame(publisher)["rid"] as? Int == expected) }
        // Every client has read everything sent to it. A `stats` answer is written after its
        // figures are taken, so `bytes_out` must equal what was received before it, once the
        // loops counted their last writes (at their next pass: ask until then).
        let observer = try TestClient(port: daemon.port)
        _ = try frame(observer)
        var counted = -1
        var before = 0
        let deadline = Date().addingTimeInterval(5)
        repeat {
            before = received
            observer.send(#"{"op":"stats"}"#)
            let stats = try frame(observer)
            counted = stats["bytes_out"] as? Int ?? -1
            #expect(stats["msgs_out"] as? Int == 2 * count)
            #expect(stats["slow_consumers"] as? Int == 0)
            if counted >= before { break }
            usleep(20_000)
        } while Date() < deadline
        #expect(counted == before)
    }

    /// Handed-off bytes count against `max_pending` until written, and stop counting once
    /// written: a subscriber on another loop that reads every burst carries ten times its
    /// bound in 20 bursts and is never taken for a slow consumer (a write left uncounted
    /// would add up past the bound within a few bursts).
    @Test func handedOffWritesStopCountingAgainstMaxPendingOnceWritten() throws {
        let daemon = try DaemonProcess(config: "max_pending: 1048576", arguments: ["--workers", "2"])
        let subscriber = try daemon.client()
        let publisher = try daemon.client()
        _ = try subscriber.request(#"{"op":"sub","ch":"burst"}"#)
        let payload = String(repeating: "b", count: 200)
        let perBurst = 2_000
        var expected = 1
        for _ in 0..<20 {
            let batch = String(repeating: #"{"op":"pub","ch":"burst","data":"\#(payload)"}"# + "\n", count: perBurst)
            publisher.send(bytes: Array(batch.utf8))
            for _ in 0..<perBurst {
                let event = try subscriber.frame(timeout: 10)
                #expect(event["seq"] as? Int == expected)
                expected += 1
            }
        }
        let stats = try publisher.request(#"{"op":"stats"}"#)
        #expect(stats["slow_consumers"] as? Int == 0)
        #expect(stats["msgs_out"] as? Int == 20 * perBurst)
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
