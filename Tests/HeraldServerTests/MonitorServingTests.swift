import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The HTTP monitor of a real daemon (`monitor_port: 0`), over real sockets.
@Suite struct MonitorServingTests {
    private func daemon(_ extra: String = "") throws -> (DaemonProcess, Int) {
        let daemon = try DaemonProcess(config: "monitor_port: 0" + (extra.isEmpty ? "" : ", " + extra))
        return (daemon, try daemon.monitorPort())
    }

    private func varz(_ port: Int) throws -> [String: Any] {
        let answer = try HTTPTestClient.request("GET", "/varz", port: port)
        #expect(answer.status == 200)
        return try JSONSerialization.jsonObject(with: Data(answer.body.utf8)) as? [String: Any] ?? [:]
    }

    @Test func theMonitorIsOffUnlessConfigured() throws {
        let daemon = try DaemonProcess()
        _ = try daemon.client()
        #expect(!daemon.log.contains { $0.contains("transport=http") })
    }

    @Test func healthzAnswersOkAndHeadSendsNoBody() throws {
        let (daemon, port) = try daemon()
        defer { withExtendedLifetime(daemon) {} }
        let answer = try HTTPTestClient.request("GET", "/healthz", port: port)
        #expect(answer.status == 200)
        #expect(answer.body == "ok\n")
        #expect(answer.headers["connection"] == "close")
        #expect(answer.headers["content-length"] == "3")
        let head = try HTTPTestClient.request("HEAD", "/healthz", port: port)
        #expect(head.status == 200)
        #expect(head.headers["content-length"] == "3")
        #expect(head.body.isEmpty)
    }

    @Test func varzFiguresFollowRealPubSubTraffic() throws {
        let (daemon, port) = try daemon()
        defer { withExtendedLifetime(daemon) {} }
        let before = try varz(port)
        #expect(before["connections"] as? Int == 0)
        #expect(before["msgs_out"] as? Int == 0)
        let subscriber = try daemon.client()
        let publisher = try daemon.client()
        _ = try subscriber.request(#"{"op":"sub","ch":"metrics.demo"}"#)
        for n in 1...5 { _ = try publisher.request(#"{"op":"pub","ch":"metrics.demo","data":\#(n),"rid":\#(n)}"#) }
        for _ in 1...5 { _ = try subscriber.frame() }
        let after = try varz(port)
        #expect(after["connections"] as? Int == 2)
        #expect(after["total_connections"] as? Int == 2)
        #expect(after["subscriptions"] as? Int == 1)
        #expect(after["channels"] as? Int == 1)
        #expect(after["msgs_in"] as? Int == 6)
        #expect(after["msgs_out"] as? Int == 5)
        #expect((after["bytes_in"] as? Int ?? 0) > 0)
        #expect((after["bytes_out"] as? Int ?? 0) > (before["bytes_out"] as? Int ?? 0))
        #expect(after["version"] as? String != nil)
        let process = after["process"] as? [String: Any]
        #expect((process?["rss_bytes"] as? Int ?? 0) > 0)
        #expect((process?["open_fds"] as? Int ?? 0) >= 5, "listeners and two clients at least")
    }

    /// With two loops the broker lock is measured per taker (issue 35: where the lock is held
    /// and for how long); one loop measures nothing.
    @Test func twoLoopsReportWhoTookTheBrokerLockAndForHowLong() throws {
        let daemon = try DaemonProcess(config: "monitor_port: 0", arguments: ["--workers", "2"])
        let port = try daemon.monitorPort()
        let subscriber = try daemon.client()
        let publisher = try daemon.client()
        _ = try subscriber.request(#"{"op":"sub","ch":"lock.demo"}"#)
        for n in 1...50 { _ = try publisher.request(#"{"op":"pub","ch":"lock.demo","data":\#(n),"rid":\#(n)}"#) }
        for _ in 1...50 { _ = try subscriber.frame() }
        let figures = try varz(port)
        for site in ["read", "flush", "writes", "tick", "other"] {
            for part in ["takes", "wait_us", "held_us"] {
                #expect(figures["broker_lock_\(site)_\(part)"] is Int, "broker_lock_\(site)_\(part)")
            }
        }
        #expect((figures["broker_lock_read_takes"] as? Int ?? 0) >= 50, "every read takes the lock once")
        #expect((figures["broker_lock_flush_takes"] as? Int ?? 0) > 0)
        let metrics = try HTTPTestClient.request("GET", "/metrics", port: port).body
        #expect(metrics.contains("# TYPE herald_broker_lock_read_held_seconds_total counter"))
        let single = try DaemonProcess(config: "monitor_port: 0", arguments: ["--workers", "1"])
        _ = try single.client().request(#"{"op":"ping"}"#)
        #expect(try varz(try single.monitorPort()).keys.allSatisfy { !$0.hasPrefix("broker_lock_") }, "one loop measures nothing")
    }

    @Test func varzHasEveryKeyOfTheStatsOpWithTheSameValues() throws {
        let (daemon, port) = try daemon()
        defer { withExtendedLifetime(daemon) {} }
        let client = try daemon.client()
        let stats = try client.request(#"{"op":"stats"}"#)
        let figures = try varz(port)
        for (key, value) in stats where key != "ok" {
            #expect(figures[key] != nil, "/varz lacks \(key)")
            if key != "uptime_ms" && key != "msgs_in" && key != "bytes_in" && key != "bytes_out" {
                #expect(figures[key] as? Int == value as? Int, "\(key) differs")
            }
        }
    }

    @Test func metricsPassPromtoolCheck() throws {
        let (daemon, port) = try daemon()
        defer { withExtendedLifetime(daemon) {} }
        let client = try daemon.client()
        _ = try client.request(#"{"op":"ping"}"#)
        let answer = try HTTPTestClient.request("GET", "/metrics", port: port)
        #expect(answer.status == 200)
        #expect(answer.headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8")
        #expect(answer.body.contains("\nherald_connections 1\n"))
        #expect(answer.body.contains("\nherald_messages_in_total 1\n"))
        #expect(answer.body.contains("\nprocess_resident_memory_bytes "))
        let promtool = try #require(Self.promtool, "promtool is missing: run scripts/bootstrap (Debian package prometheus)")
        let check = Process()
        check.executableURL = URL(fileURLWithPath: promtool)
        check.arguments = ["check", "metrics"]
        let input = Pipe(), output = Pipe()
        check.standardInput = input
        check.standardOutput = output
        check.standardError = output
        try check.run()
        input.fileHandleForWriting.write(Data(answer.body.utf8))
        try input.fileHandleForWriting.close()
        let report = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        check.waitUntilExit()
        #expect(check.terminationStatus == 0, "promtool: \(report)")
        #expect(report.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty, "promtool: \(report)")
    }

    /// `promtool` on PATH or in /usr/bin.
    private static var promtool: String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin"
        for directory in path.split(separator: ":").map(String.init) + ["/usr/bin"] {
            let candidate = directory + "/promtool"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }

    @Test func unknownPathIs404AndOtherMethodsAre405() throws {
        let (daemon, port) = try daemon()
        defer { withExtendedLifetime(daemon) {} }
        #expect(try HTTPTestClient.request("GET", "/nope", port: port).status == 404)
        let post = try HTTPTestClient.request("POST", "/metrics", port: port)
        #expect(post.status == 405)
        #expect(post.headers["allow"] == "GET, HEAD")
    }

    @Test func malformedRequestsAre400AndTheMonitorKeepsServing() throws {
        let (daemon, port) = try daemon()
        defer { withExtendedLifetime(daemon) {} }
        for bad in ["GARBAGE\r\n\r\n", "GET /varz HTTP/1.1\r\n\r\n", "GET /varz HTTP/1.0\r\nbad header\r\n\r\n", "\u{16}\u{03}\u{01}\u{02}\u{00}\r\n\r\n"] {
            let client = try HTTPTestClient(port: port)
            client.send(bad)
            #expect(try client.answer().status == 400, "\(bad.debugDescription)")
        }
        #expect(try HTTPTestClient.request("GET", "/healthz", port: port).status == 200)
    }

    @Test func oversizedHeadersAre431() throws {
        let (daemon, port) = try daemon()
        defer { withExtendedLifetime(daemon) {} }
        let client = try HTTPTestClient(port: port)
        client.send("GET /metrics HTTP/1.1\r\nHost: x\r\nCookie: " + String(repeating: "a", count: 10_000) + "\r\n\r\n")
        #expect(try client.answer().status == 431)
    }

    @Test func anUnfinishedRequestGets408AfterTheTimeout() throws {
        let (daemon, port) = try daemon("monitor_timeout_ms: 300")
        defer { withExtendedLifetime(daemon) {} }
        let client = try HTTPTestClient(port: port)
        client.send("GET /metrics HTTP/1.1\r\nHost: x\r\n")
        let answer = try client.answer(timeout: 10)
        #expect(answer.status == 408)
        let silent = try HTTPTestClient(port: port)
        #expect(try silent.answer(timeout: 10).status == 408, "a client that sends nothing is timed out too")
    }

    @Test func slowHTTPClientsDoNotDelayPubSubOrOtherHTTPClients() throws {
        let (daemon, port) = try daemon("monitor_timeout_ms: 60000")
        defer { withExtendedLifetime(daemon) {} }
        // Twenty clients each stuck in the middle of a request head.
        let slow = try (0..<20).map { _ in try HTTPTestClient(port: port) }
        for client in slow { client.send("GET /varz HTTP/1.1\r\nHo") }
        let subscriber = try daemon.client()
        let publisher = try daemon.client()
        _ = try subscriber.request(#"{"op":"sub","ch":"busy"}"#)
        for n in 1...50 { publisher.send(#"{"op":"pub","ch":"busy","data":\#(n)}"#) }
        for n in 1...50 { #expect(try subscriber.frame()["data"] as? Int == n) }
        #expect(try HTTPTestClient.request("GET", "/healthz", port: port).status == 200)
        // The slow ones were only waiting: each still gets its answer when it finishes.
        for client in slow { #expect(client.hasNothingToRead()) }
        for client in slow { client.send("st: x\r\n\r\n") }
        for client in slow { #expect(try client.answer().status == 200) }
    }

    @Test func halfSentRequestsPastTheCapCannotKeepHealthzOut() throws {
        let (daemon, port) = try daemon("monitor_timeout_ms: 60000")
        defer { withExtendedLifetime(daemon) {} }
        // The red-team run: 70 idle half-sent requests made /healthz answer 0 of 5. Ten times
        // the cap now: each new connection takes the place of the oldest unanswered one.
        let held = try (0..<640).map { _ in try HTTPTestClient(port: port) }
        for client in held { client.send("GET /varz HTTP/1.1\r\nHo") }
        for _ in 0..<5 {
            #expect(try HTTPTestClient.request("GET", "/healthz", port: port).status == 200)
        }
        // The newest half-sent requests are still open and answered when they finish.
        let newest = held.suffix(10)
        for client in newest { client.send("st: x\r\n\r\n") }
        for client in newest { #expect(try client.answer().status == 200) }
        #expect(try held[0].readToEnd(timeout: 10).isEmpty, "the oldest was closed to make room")
    }

    @Test func theConsoleIsServedByteForByteWithWhereTheWebSocketListenerIs() throws {
        let (daemon, port) = try daemon("ws_port: 0")
        let wsPort = try daemon.listeningPort("ws")
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let files = [("/", "clients/console/index.html", "text/html; charset=utf-8"),
                     ("/console.css", "clients/console/console.css", "text/css; charset=utf-8"),
                     ("/console.js", "clients/console/console.js", "text/javascript; charset=utf-8"),
                     ("/herald.mjs", "clients/js/herald.mjs", "text/javascript; charset=utf-8")]
        for (path, file, type) in files {
            let answer = try HTTPTestClient.request("GET", path, port: port)
            let wanted = try String(contentsOf: root.appendingPathComponent(file), encoding: .utf8)
            #expect(answer.status == 200 && answer.headers["content-type"] == type, "\(path)")
            #expect(answer.body == wanted, "\(path) is \(file) (run scripts/embed-js after changing it)")
        }
        let info = try HTTPTestClient.request("GET", "/console.json", port: port)
        let object = try JSONSerialization.jsonObject(with: Data(info.body.utf8)) as? [String: Any] ?? [:]
        #expect(object["ws_port"] as? Int == wsPort && object["wss_port"] is NSNull && object["node"] is NSNull, "\(object)")
        let bare = try DaemonProcess(config: "monitor_port: 0")
        let none = try HTTPTestClient.request("GET", "/console.json", port: try bare.monitorPort())
        #expect(none.body.contains(#""ws_port":null"#))
    }

    @Test func healthzTurns503WhileTheDaemonDrains() throws {
        let (daemon, port) = try daemon()
        defer { withExtendedLifetime(daemon) {} }
        // A subscriber that never reads keeps the daemon draining for its grace period.
        let stuck = try daemon.client()
        _ = try stuck.request(#"{"op":"sub","ch":"flood"}"#)
        let publisher = try daemon.client()
        let payload = String(repeating: "x", count: 60_000)
        for n in 1...200 { publisher.send(#"{"op":"pub","ch":"flood","data":"\#(payload)","rid":\#(n)}"#) }
        for _ in 1...200 { _ = try publisher.frame(timeout: 30) }
        #expect(try HTTPTestClient.request("GET", "/healthz", port: port).status == 200)
        daemon.signal(SIGTERM)
        var status = 0
        let deadline = Date().addingTimeInterval(10)
        while status != 503 && Date() < deadline {
            status = (try? HTTPTestClient.request("GET", "/healthz", port: port).status) ?? 0
            if status != 503 { usleep(10_000) }
        }
        #expect(status == 503)
        #expect(daemon.waitForExit(seconds: 15) == 0)
    }
}
