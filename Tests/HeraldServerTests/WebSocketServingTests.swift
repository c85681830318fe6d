import Foundation
import HeraldTestSupport
import Testing

/// The WebSocket listener (issue 34) against a real heraldd: the same protocol as TCP in
/// text messages, the RFC's close codes on violations, `ws_origins`, the half-close.
@Suite(.serialized)
struct WebSocketServingTests {
    /// A daemon with a WebSocket listener; its port read from the `listening transport=ws` line.
    private func daemon(_ extra: String = "") throws -> (DaemonProcess, Int) {
        let daemon = try DaemonProcess(config: "ws_port: 0," + extra)
        return (daemon, try daemon.listeningPort("ws"))
    }

    @Test func theInfoLineComesFirstAndEventsCrossBetweenWebSocketAndTCP() throws {
        let (daemon, port) = try daemon()
        let web = try TestWebSocket(port: port)
        #expect(web.head.contains("Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo="))
        #expect(try web.json()["info"] != nil, "the info line is the first message")
        #expect(try web.request(#"{"op":"sub","ch":"a.*","rid":1}"#)["ok"] as? String == "sub")
        let tcp = try TestClient(port: daemon.port)
        _ = try tcp.frame()
        #expect(try tcp.request(#"{"op":"sub","ch":"a.x","rid":1}"#)["ok"] as? String == "sub")
        tcp.send(#"{"op":"pub","ch":"a.x","data":"from tcp","rid":2}"#)
        let both = try [tcp.frame(), tcp.frame()]
        #expect(both.contains { $0["receivers"] as? Int == 2 }, "the receipt counts both: \(both)")
        #expect(both.contains { $0["data"] as? String == "from tcp" }, "its own copy")
        let got = try web.json()
        #expect(got["event"] as? String == "a.x" && got["data"] as? String == "from tcp")
        web.send(#"{"op":"pub","ch":"a.x","data":"from the web"}"#)
        #expect(try tcp.frame()["data"] as? String == "from the web")
        #expect(try web.json()["data"] as? String == "from the web")
    }

    @Test func aMessageMayBeFragmentedWithAPingBetweenAndEndWithoutANewline() throws {
        let (server, port) = try daemon()
        defer { withExtendedLifetime(server) {} }
        let web = try TestWebSocket(port: port)
        _ = try web.json()
        let line = Array(#"{"op":"ping","rid":"frag"}"#.utf8)
        web.send(bytes: TestWebSocket.frame(0x1, Array(line[..<9]), final: false) + TestWebSocket.frame(0x9, Array("hb".utf8))
            + TestWebSocket.frame(0x0, Array(line[9...])))
        let pong = try web.frame()
        #expect(pong.opcode == 0xA && pong.payload == Array("hb".utf8), "a ping gets a pong with its payload")
        let answer = try web.json()
        #expect(answer["rid"] as? String == "frag" && answer["pong"] != nil, "\(answer)")
        // Two lines in one message, the last without `\n`.
        web.send(#"{"op":"ping","rid":1}"# + "\n" + #"{"op":"ping","rid":2}"#, terminated: false)
        #expect(try web.json()["rid"] as? Int == 1)
        #expect(try web.json()["rid"] as? Int == 2)
    }

    @Test func violationsCloseWithTheirCodesAndEverythingElseLivesOn() throws {
        let (server, port) = try daemon()
        defer { withExtendedLifetime(server) {} }
        let bystander = try TestWebSocket(port: port)
        _ = try bystander.json()
        let cases: [([UInt8], UInt16)] = [
            (TestWebSocket.frame(0x1, Array("{}\n".utf8), masked: false), 1002),
            (TestWebSocket.frame(0x2, [1, 2, 3]), 1003),
            (TestWebSocket.frame(0x1, [0xC3, 0x28, 10]), 1007),
            (TestWebSocket.frame(0x0, Array("x".utf8)), 1002),
            (TestWebSocket.frame(0x9, [1], final: false), 1002),
            ([0x81, 0xFF, 0x80, 0, 0, 0, 0, 0, 0, 0], 1002),
        ]
        for (bytes, code) in cases {
            let web = try TestWebSocket(port: port)
            _ = try web.json()
            web.send(bytes: bytes)
            let close = try web.frame()
            #expect(close.opcode == 8 && close.closeCode == code, "\(bytes.prefix(10)): \(close)")
            #expect(web.socket.isClosedByPeer(), "closed after the close frame")
        }
        #expect(try bystander.request(#"{"op":"ping","rid":"alive"}"#)["rid"] as? String == "alive")
    }

    @Test func aCloseFrameIsAHalfCloseAnsweredThenEchoed() throws {
        let (server, port) = try daemon()
        defer { withExtendedLifetime(server) {} }
        let web = try TestWebSocket(port: port)
        _ = try web.json()
        web.send(bytes: TestWebSocket.frame(0x1, Array(#"{"op":"set","ch":"k","value":1,"rid":9}"#.utf8))
            + TestWebSocket.frame(0x8, [0x03, 0xE8]))
        #expect(try web.json()["rid"] as? Int == 9, "what was read is answered")
        let close = try web.frame()
        #expect(close.opcode == 8 && close.closeCode == 1000)
        #expect(web.socket.isClosedByPeer())
    }

    @Test func framesAfterACloseAreNotReadAndAnOverlongMessageIsLineTooLong() throws {
        let (server, port) = try daemon("max_line: 65536,")
        defer { withExtendedLifetime(server) {} }
        let web = try TestWebSocket(port: port)
        _ = try web.json()
        // One message far past max_line, without a newline: answered as TCP answers a long line.
        web.send(bytes: TestWebSocket.frame(0x1, [UInt8](repeating: UInt8(ascii: "a"), count: 300_000)))
        #expect(try web.json()["error"] as? String == "line_too_long")
        #expect(try web.request(#"{"op":"ping","rid":"after"}"#)["rid"] as? String == "after", "the connection lives on")
        web.send(bytes: TestWebSocket.frame(0x8, [0x03, 0xE8]) + TestWebSocket.frame(0x1, Array(#"{"op":"ping","rid":"late"}"#.utf8)))
        let close = try web.frame()
        #expect(close.opcode == 8 && close.closeCode == 1000, "the frame after the close is not answered: \(close)")
        #expect(web.socket.isClosedByPeer())
    }

    @Test func originsOutsideTheListAreRefusedAndRequestsWithoutOneAreNot() throws {
        let (server, port) = try daemon(#"ws_origins: ["https://app.example"],"#)
        defer { withExtendedLifetime(server) {} }
        #expect(throws: TestWebSocket.WebSocketError.self) { _ = try TestWebSocket(port: port, origin: "https://evil.example") }
        do {
            _ = try TestWebSocket(port: port, origin: "https://evil.example")
        } catch TestWebSocket.WebSocketError.refused(let head) {
            #expect(head.hasPrefix("HTTP/1.1 403"), "\(head)")
        }
        let allowed = try TestWebSocket(port: port, origin: "https://app.example")
        #expect(try allowed.json()["info"] != nil)
        let tool = try TestWebSocket(port: port)
        #expect(try tool.json()["info"] != nil, "no Origin: not a browser")
        let (closedServer, closedPort) = try daemon()
        defer { withExtendedLifetime(closedServer) {} }
        #expect(throws: TestWebSocket.WebSocketError.self, "no origin is allowed by default") {
            _ = try TestWebSocket(port: closedPort, origin: "http://localhost:3000")
        }
    }

    @Test func aMalformedUpgradeGets400AndTheDaemonLivesOn() throws {
        let (daemon, port) = try daemon()
        for request in ["GET / HTTP/1.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n\r\n",
                        "BREW /pot HTTP/1.1\r\nUpgrade: websocket\r\n\r\n", "\u{1}\u{2}garbage\r\n\r\n"] {
            let client = try TestClient(port: port)
            client.send(bytes: Array(request.utf8))
            var buffer: [UInt8] = []
            let head = try TestWebSocket.readHead(client, into: &buffer)
            #expect(head.hasPrefix("HTTP/1.1 4"), "\(request.debugDescription): \(head)")
            #expect(client.isClosedByPeer())
        }
        let tcp = try TestClient(port: daemon.port)
        #expect(try tcp.frame()["info"] != nil)
    }

    /// `wss_port`: the same over TLS (the upgrade, the lines, the close frame, all sealed).
    @Test func wssSpeaksTheSameInsideTLS() throws {
        let certificate = try TestCertificate()
        defer { certificate.remove() }
        let daemon = try DaemonProcess(config: certificate.daemonConfig + "wss_port: 0,")
        let client = try TLSLineClient(port: try daemon.listeningPort("wss"))
        let upgrade = "GET /chat HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
        try client.send(bytes: Array(upgrade.utf8) + TestWebSocket.frame(0x1, Array(#"{"op":"ping","rid":"secure"}"#.utf8))
            + TestWebSocket.frame(0x8, [0x03, 0xE8]))
        let (lines, closed) = client.linesUntilClosed()
        let text = lines.joined(separator: "\n")
        #expect(text.hasPrefix("HTTP/1.1 101 Switching Protocols"), "\(text.prefix(200))")
        #expect(text.contains(#""info":"#) && text.contains(#""rid":"secure""#), "the info line and the answer: \(text)")
        // The close frame (0x88 0x02 0x03 0xE8) is not UTF-8: the line reader shows it as U+FFFD.
        #expect(lines.last?.contains("\u{FFFD}") == true, "a close frame last: \(lines.last ?? "")")
        #expect(closed, "then the connection closes")
    }

    /// A slowloris upgrade (a byte now and then, never the end of the head) is cut by the
    /// silence timeout of a silent TCP connection: bytes of an unfinished upgrade are not
    /// traffic (`heartbeat_ms`: a ping, then two more intervals).
    @Test func aSlowlorisUpgradeIsCutLikeASilentConnection() throws {
        let (server, port) = try daemon("heartbeat_ms: 200,")
        defer { withExtendedLifetime(server) {} }
        let slow = try TestClient(port: port)
        let started = Date()
        var closed = false
        for byte in Array("GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nX-Drip: ".utf8) + Array(repeating: UInt8(ascii: "a"), count: 60) {
            slow.send(bytes: [byte])
            if slow.isClosedByPeer(timeout: 0.1) {
                closed = true
                break
            }
        }
        let took = Date().timeIntervalSince(started)
        #expect(closed && took < 3, "cut after \(took) s")
        let silent = try TestClient(port: server.port)
        _ = try silent.frame()
        let silentStart = Date()
        #expect(silent.isClosedByPeer(timeout: 5), "a silent TCP connection is cut too")
        #expect(abs(Date().timeIntervalSince(silentStart) - took) < 1.5, "by about the same time")
        let web = try TestWebSocket(port: port)
        #expect(try web.json()["info"] != nil, "the daemon lives on")
    }

    /// A subscriber over WebSocket that never reads is a slow consumer as on TCP: it is cut at
    /// `max_pending`, and the publisher and the other subscribers are not slowed.
    @Test func aWebSocketReaderThatNeverReadsIsASlowConsumer() throws {
        let (server, port) = try daemon("max_pending: 1048576,")
        defer { withExtendedLifetime(server) {} }
        let sleeper = try TestWebSocket(port: port)
        _ = try sleeper.json()
        #expect(try sleeper.request(#"{"op":"sub","ch":"flood","rid":1}"#)["ok"] as? String == "sub")
        let reader = try TestWebSocket(port: port)
        _ = try reader.json()
        #expect(try reader.request(#"{"op":"sub","ch":"flood","rid":1}"#)["ok"] as? String == "sub")
        let publisher = try TestClient(port: server.port)
        _ = try publisher.frame()
        // 12 MB in all, far past max_pending and the sockets' buffers; the reader reads as it
        // goes (20 events at most behind).
        let payload = String(repeating: "x", count: 4_000)
        var received = 0
        for n in 0..<3_000 {
            publisher.send(#"{"op":"pub","ch":"flood","data":"\#(payload)"}"#)
            if n % 20 == 19 {
                while received < n - 10, (try? reader.json(timeout: 2)) != nil { received += 1 }
            }
        }
        #expect(try publisher.request(#"{"op":"ping","rid":"p"}"#)["rid"] as? String == "p", "the publisher was not slowed")
        var lastError = ""
        while received < 3_000 {
            do {
                _ = try reader.json(timeout: 2)
                received += 1
            } catch {
                lastError = "\(error)"
                break
            }
        }
        #expect(received == 3_000, "the reader got every event: \(received), then \(lastError)")
        #expect(sleeper.socket.isClosedByPeer(timeout: 5), "the sleeper was cut")
        let stats = try publisher.request(#"{"op":"stats"}"#)
        #expect((stats["slow_consumers"] as? Int ?? 0) >= 1, "\(stats)")
    }
}
