import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The real daemon over real sockets, as `nc` would use it.
@Suite struct DaemonServingTests {
    @Test func connectGetsInfoFrame() throws {
        let daemon = try DaemonProcess()
        let client = try TestClient(port: daemon.port)
        let info = try client.frame()["info"] as? [String: Any]
        #expect(info?["server"] as? String == "heraldd")
        #expect(info?["proto"] as? Int == 1)
        #expect((info?["client"] as? String)?.hasPrefix("c") == true)
        #expect(info?["max_line"] as? Int == 1_048_576)
    }

    @Test func eventPublishedByOneClientReachesAnother() throws {
        let daemon = try DaemonProcess()
        let subscriber = try daemon.client()
        let publisher = try daemon.client()
        #expect(try subscriber.request(#"{"op":"sub","ch":"chat.room"}"#)["ok"] as? String == "sub")
        let receipt = try publisher.request(#"{"op":"pub","ch":"chat.room","data":{"text":"hi"},"rid":1}"#)
        #expect(receipt["receivers"] as? Int == 1)
        let line = try subscriber.line()
        #expect(line.hasPrefix(#"{"event":"chat.room","sub":"s1","seq":1,"from":"#))
        #expect(line.hasSuffix(#""data":{"text":"hi"}}"#))
    }

    @Test func unixSocketServesTheSameProtocol() throws {
        let path = "/tmp/heraldd-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).sock"
        let daemon = try DaemonProcess(arguments: ["--unix", path])
        let local = try TestClient(unixPath: path)
        #expect(try local.frame()["info"] != nil)
        let remote = try daemon.client()
        _ = try local.request(#"{"op":"sub","ch":"x"}"#)
        remote.send(#"{"op":"pub","ch":"x","data":1}"#)
        #expect(try local.frame()["data"] as? Int == 1)
    }

    @Test func requestSplitAcrossManyWritesIsReassembled() throws {
        let daemon = try DaemonProcess()
        let client = try daemon.client()
        for byte in Array(#"{"op":"ping","rid":"slow"}"#.utf8) + [13, 10] {
            client.send(bytes: [byte])
            usleep(1000)
        }
        #expect(try client.frame()["rid"] as? String == "slow")
    }

    @Test func manyRequestsInOneWriteAreAllAnsweredInOrder() throws {
        let daemon = try DaemonProcess()
        let client = try daemon.client()
        let batch = (1...200).map { #"{"op":"ping","rid":\#($0)}"# }.joined(separator: "\r\n") + "\n\n\n"
        client.send(bytes: Array(batch.utf8))
        for n in 1...200 { #expect(try client.frame()["rid"] as? Int == n) }
    }

    @Test func overlongLineIsRefusedAndConnectionLives() throws {
        let daemon = try DaemonProcess(config: "max_line: 1024")
        let client = try daemon.client()
        client.send(bytes: Array(#"{"op":"pub","ch":"a","data":""#.utf8) + Array(repeating: UInt8(ascii: "x"), count: 200_000))
        #expect(try client.frame()["error"] as? String == "line_too_long")
        client.send(bytes: Array(#"xxxx"}"#.utf8) + [10])
        #expect(try client.request(#"{"op":"ping","rid":2}"#)["rid"] as? Int == 2)
    }

    @Test func garbageNeverHurtsOtherClients() throws {
        let daemon = try DaemonProcess()
        let bystander = try daemon.client()
        _ = try bystander.request(#"{"op":"sub","ch":"t"}"#)
        let vandal = try daemon.client()
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<50 {
            var junk = (0..<200).map { _ in UInt8.random(in: 0...255, using: &generator) }
            junk.removeAll { $0 == 10 }
            vandal.send(bytes: junk + [10])
        }
        vandal.send(bytes: [0xC0, 0x80, 0x00, 10])
        let other = try daemon.client()
        other.send(#"{"op":"pub","ch":"t","data":"still here"}"#)
        #expect(try bystander.frame()["data"] as? String == "still here")
        #expect(try other.request(#"{"op":"ping"}"#)["pong"] != nil)
    }

    @Test func tooManyErrorsClosesOnlyThatConnection() throws {
        let daemon = try DaemonProcess(config: "max_errors: 5")
        let bad = try daemon.client()
        for _ in 0..<5 { bad.send("{oops") }
        var codes: [String] = []
        for _ in 0..<6 { codes.append(try bad.frame()["error"] as? String ?? "?") }
        #expect(codes.last == "too_many_errors")
        #expect(bad.isClosedByPeer())
        let good = try daemon.client()
        #expect(try good.request(#"{"op":"ping"}"#)["pong"] != nil)
    }

    @Test func silentClientIsPingedThenDisconnected() throws {
        let daemon = try DaemonProcess(config: "heartbeat_ms: 100")
        let client = try daemon.client()
        #expect(try client.frame(timeout: 2)["ping"] != nil)
        #expect(client.isClosedByPeer(timeout: 3))
    }

    @Test func clientAnsweringPingsStaysConnected() throws {
        let daemon = try DaemonProcess(config: "heartbeat_ms: 100")
        let client = try daemon.client()
        for _ in 0..<4 {
            #expect(try client.frame(timeout: 2)["ping"] != nil)
            client.send(#"{"op":"pong"}"#)
        }
        #expect(try client.request(#"{"op":"ping","rid":1}"#)["rid"] as? Int == 1)
    }

    @Test func slowConsumerIsCutOffWhilePublisherAndOthersGoOn() throws {
        let daemon = try DaemonProcess(config: "max_pending: 65536")
        let slow = try daemon.client()
        let publisher = try daemon.client()
        #expect(try floodPastMaxPending(subscriber: slow, publisher: publisher) == 3000)
        var sawError = false
        while let frame = try? slow.frame(timeout: 3) {
            if frame["error"] as? String == "slow_consumer" { sawError = true }
        }
        #expect(sawError)
        let stats = try publisher.request(#"{"op":"stats"}"#)
        #expect(stats["slow_consumers"] as? Int == 1)
    }

    @Test func sigtermSendsShuttingDownAndExitsZero() throws {
        let daemon = try DaemonProcess()
        let a = try daemon.client()
        let b = try daemon.client()
        daemon.signal(SIGTERM)
        #expect(try a.frame()["error"] as? String == "shutting_down")
        #expect(try b.frame()["error"] as? String == "shutting_down")
        #expect(a.isClosedByPeer())
        #expect(daemon.waitForExit(seconds: 5) == 0)
    }

    @Test func sighupReloadsLiveKeys() throws {
        let daemon = try DaemonProcess(config: "max_line: 2048")
        let configFile = daemon.directory.appendingPathComponent("heraldd.json5")
        try "{max_line: 4096}".write(to: configFile, atomically: true, encoding: .utf8)
        daemon.signal(SIGHUP)
        let deadline = Date().addingTimeInterval(5)
        while !daemon.log.contains(where: { $0.contains("reloaded") }) && Date() < deadline { usleep(10_000) }
        let client = try TestClient(port: daemon.port)
        let info = try client.frame()["info"] as? [String: Any]
        #expect(info?["max_line"] as? Int == 4096)
    }

    @Test func connectionPastMaxConnectionsIsRefusedAndOthersGoOn() throws {
        let daemon = try DaemonProcess(config: "max_connections: 2")
        let first = try daemon.client()
        let second = try daemon.client()
        let third = try TestClient(port: daemon.port)
        #expect(try third.frame()["error"] as? String == "limit")
        #expect(third.isClosedByPeer())
        #expect(try first.request(#"{"op":"ping","rid":1}"#)["rid"] as? Int == 1)
        second.closeNow()
        let deadline = Date().addingTimeInterval(5)
        while Date() < deadline, try first.request(#"{"op":"stats"}"#)["connections"] as? Int != 1 { usleep(20_000) }
        let fourth = try TestClient(port: daemon.port)
        #expect(try fourth.frame()["info"] != nil, "a freed place can be taken")
    }
}

/// Subscribes `subscriber` to `flood` (it then reads nothing) and pipelines 3,000 events of
/// 4 KB from `publisher`, past a 64 KiB `max_pending`.
/// - Returns: how many publish receipts came back (all of them: the publisher is not held up).
func floodPastMaxPending(subscriber: TestClient, publisher: TestClient) throws -> Int {
    _ = try subscriber.request(#"{"op":"sub","ch":"flood"}"#)
    let payload = String(repeating: "y", count: 4000)
    for n in 0..<3000 { publisher.send(#"{"op":"pub","ch":"flood","data":"\#(payload)","rid":\#(n)}"#) }
    var receipts = 0
    while receipts < 3000, (try? publisher.frame(timeout: 10))?["ok"] != nil { receipts += 1 }
    return receipts
}
