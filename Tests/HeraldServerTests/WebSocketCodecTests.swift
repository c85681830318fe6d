import Foundation
import Testing
@testable import HeraldServer

/// The WebSocket layer's pure parts (issue 34): frames decoded from any split of the
/// input, every violation with its RFC close code, the handshake's accept key (RFC 6455's
/// own example) and refusals.
struct WebSocketCodecTests {
    /// A masked client frame (`TestWebSocket.frame`).
    private func frame(_ opcode: UInt8, _ payload: [UInt8], final: Bool = true, mask: [UInt8] = [1, 2, 3, 4],
                       masked: Bool = true, rsv: UInt8 = 0) -> [UInt8] {
        TestWebSocket.frame(opcode, payload, final: final, masked: masked, mask: mask, rsv: rsv)
    }

    /// Everything `bytes` decode to, fed in pieces of `step` bytes: the text (joined over
    /// the pieces) and the events, each with the text length before it.
    private func decode(_ bytes: [UInt8], step: Int = 1 << 30) -> (text: [UInt8], events: [(Int, WebSocketFrameDecoder.Event)]) {
        var decoder = WebSocketFrameDecoder()
        var text: [UInt8] = []
        var events: [(Int, WebSocketFrameDecoder.Event)] = []
        var at = 0
        while at < bytes.count {
            let end = min(at + step, bytes.count)
            var piece = Array(bytes[at..<end])
            let before = text.count
            let eventsBefore = events.count
            let count = piece.withUnsafeMutableBytes { buffer in
                decoder.decode(buffer) { events.append((before + $0, $1)) }
            }
            // A line end the piece had no room for goes in its place among the text.
            var inserted = 0
            for index in events.indices where index >= eventsBefore {
                if case .lineEnd = events[index].1 {
                    let position = events[index].0 - before
                    piece.insert(10, at: position + inserted)
                    inserted += 1
                }
            }
            text += piece[..<(count + inserted)]
            events.removeAll { if case .lineEnd = $0.1 { return true } else { return false } }
            at = end
        }
        return (text, events)
    }

    @Test(arguments: [1, 2, 3, 7, 1 << 30])
    func fragmentedTextWithAPingBetweenDecodesTheSameAtAnySplit(step: Int) {
        let line = Array(#"{"op":"pub","ch":"é.x","data":1}"#.utf8)
        let bytes = frame(0x1, Array(line[..<10]), final: false) + frame(0x9, Array("hi".utf8))
            + frame(0x0, Array(line[10...]), final: true) + frame(0x8, [0x03, 0xE8]) + frame(0x1, Array("late\n".utf8))
        let (text, events) = decode(bytes, step: step)
        #expect(text == line + [10], "the message's last line ended with \\n")
        #expect(events.map(\.0) == [10, line.count + 1])
        #expect(events.map(\.1) == [.ping(Array("hi".utf8)), .close(code: 1000, reason: [])], "nothing after the close")
    }

    @Test func lengthsOf126AndMoreUseTheLongerFormsAndUnmaskAtAnyOffset() {
        for size in [1, 7, 8, 9, 125, 126, 65_535, 65_536, 200_000] {
            let payload = (0..<size).map { UInt8(ascii: "a") + UInt8($0 % 26) }
            for step in [3, 4_096] {
                let (text, events) = decode(frame(0x1, payload, mask: [0x12, 0x9A, 0xF0, 0x3C]), step: step)
                #expect(text == payload + [10] && events.isEmpty, "\(size) in pieces of \(step)")
            }
        }
    }

    @Test func violationsGetTheirCloseCodes() {
        let cases: [([UInt8], UInt16)] = [
            (frame(0x1, [65], masked: false), 1002),
            (frame(0x1, [65], rsv: 0x40), 1002),
            (frame(0x2, [1, 2]), 1003),
            (frame(0x3, []), 1002),
            (frame(0x0, [65]), 1002),
            (frame(0x1, [65], final: false) + frame(0x1, [66]), 1002),
            (frame(0x9, [1], final: false), 1002),
            (frame(0x9, [UInt8](repeating: 0, count: 126)), 1002),
            (frame(0x1, [0xC3, 0x28]), 1007),
            (frame(0x1, [0xED, 0xA0, 0x80]), 1007),
            (frame(0x1, [0xC3]), 1007),
            (frame(0x1, Array("abcdefgh".utf8) + [0xFF] + Array("abcdefgh".utf8)), 1007),
            (frame(0x8, [0x03]), 1002),
            (frame(0x8, [0x03, 0xED]), 1002),
            (frame(0x8, [0x03, 0xE8, 0xFF]), 1007),
            ([0x81, 0xFF, 0x80, 0, 0, 0, 0, 0, 0, 0], 1002),
        ]
        for (bytes, code) in cases {
            let (_, events) = decode(bytes)
            guard case .fail(let got, _)? = events.last?.1 else {
                Issue.record("no failure for \(bytes.prefix(12)): \(events)")
                continue
            }
            #expect(got == code, "\(bytes.prefix(12))")
        }
    }

    @Test func nothingIsDecodedAfterAViolation() {
        let (text, events) = decode(frame(0x2, [1]) + frame(0x1, [65]))
        #expect(events.count == 1 && text.isEmpty)
    }

    @Test func aUTF8CharacterSplitOverFramesIsValid() {
        let euro: [UInt8] = [0xE2, 0x82, 0xAC]
        let bytes = frame(0x1, [euro[0]], final: false) + frame(0x0, [euro[1]], final: false) + frame(0x0, [euro[2]])
        let (text, events) = decode(bytes)
        #expect(text == euro + [10] && events.isEmpty)
    }

    @Test func serverFramesAreUnmaskedWithTheShortestLength() {
        #expect(WebSocketFrameEncoder.text(Array("ab".utf8)) == [0x81, 2, 97, 98])
        #expect(WebSocketFrameEncoder.text([UInt8](repeating: 0, count: 300)).prefix(4) == [0x81, 126, 1, 44])
        #expect(WebSocketFrameEncoder.text([UInt8](repeating: 0, count: 70_000)).prefix(10) == [0x81, 127, 0, 0, 0, 0, 0, 1, 0x11, 0x70])
        #expect(WebSocketFrameEncoder.pong([7]) == [0x8A, 1, 7])
        #expect(WebSocketFrameEncoder.close(code: 1002, reason: "x") == [0x88, 3, 0x03, 0xEA, 120])
        let long = WebSocketFrameEncoder.close(code: 1000, reason: String(repeating: "é", count: 100))
        #expect(long[1] <= 125 && (long.count - 4) % 2 == 0, "cut on a character boundary within 125 bytes")
    }

    /// RFC 6455, section 1.3's example.
    @Test func theAcceptKeyIsTheRFCs() {
        #expect(WebSocketHandshake.accept("dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
    }

    private func request(_ fields: [(String, String)], method: String = "GET", path: String = "/") -> HTTPRequest {
        HTTPRequest(method: method, target: path, path: path, minorVersion: 1,
                    fields: fields.map { HTTPRequest.Field(name: $0.0, value: $0.1) })
    }

    private let upgrade = [("Host", "h"), ("Upgrade", "websocket"), ("Connection", "keep-alive, Upgrade"),
                           ("Sec-WebSocket-Version", "13"), ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")]

    private func status(_ decision: WebSocketHandshake.Decision) -> String {
        switch decision {
        case .upgrade(let bytes), .answer(let bytes): return String(decoding: bytes.prefix(12), as: UTF8.self)
        }
    }

    @Test func upgradesAreAcceptedOrRefusedWithTheStatusThatSaysWhy() {
        let ok = WebSocketHandshake.decide(request(upgrade), origins: [], script: [])
        guard case .upgrade(let bytes) = ok else {
            Issue.record("\(ok)")
            return
        }
        #expect(String(decoding: bytes, as: UTF8.self).contains("Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"))
        let allowed = WebSocketHandshake.decide(request(upgrade + [("Origin", "https://app.example")]),
                                                origins: ["https://app.example"], script: [])
        #expect(status(allowed) == "HTTP/1.1 101")
        #expect(status(WebSocketHandshake.decide(request(upgrade + [("Origin", "https://evil.example")]),
                                                 origins: ["https://app.example"], script: [])) == "HTTP/1.1 403")
        #expect(status(WebSocketHandshake.decide(request(upgrade + [("Origin", "https://any")]), origins: ["*"], script: []))
            == "HTTP/1.1 101")
        #expect(status(WebSocketHandshake.decide(request(upgrade + [("Origin", "https://any")]), origins: [], script: []))
            == "HTTP/1.1 403", "no origin is allowed unless listed")
        let old = upgrade.map { $0.0 == "Sec-WebSocket-Version" ? ($0.0, "8") : $0 }
        #expect(status(WebSocketHandshake.decide(request(old), origins: [], script: [])) == "HTTP/1.1 426")
        let badKey = upgrade.map { $0.0 == "Sec-WebSocket-Key" ? ($0.0, "short") : $0 }
        #expect(status(WebSocketHandshake.decide(request(badKey), origins: [], script: [])) == "HTTP/1.1 400")
        let noConnection = upgrade.filter { $0.0 != "Connection" }
        #expect(status(WebSocketHandshake.decide(request(noConnection), origins: [], script: [])) == "HTTP/1.1 400")
        #expect(status(WebSocketHandshake.decide(request(upgrade, method: "POST"), origins: [], script: [])) == "HTTP/1.1 400")
        let script = WebSocketHandshake.decide(request([("Host", "h")], path: "/herald.mjs"), origins: [], script: Array("x".utf8))
        guard case .answer(let js) = script else {
            Issue.record("\(script)")
            return
        }
        #expect(String(decoding: js, as: UTF8.self).contains("text/javascript"))
        #expect(String(decoding: js, as: UTF8.self).contains("Access-Control-Allow-Origin: *"), "a page on another origin imports it")
        #expect(status(WebSocketHandshake.decide(request([("Host", "h")], path: "/x"), origins: [], script: [])) == "HTTP/1.1 404")
    }

    /// The module heraldd serves is `clients/js/herald.mjs` byte for byte: the generated
    /// WebSocketClientScript.swift was regenerated (`scripts/embed-js`) after the last change.
    @Test func embeddedClientIsCurrent() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let file = try Data(contentsOf: root.appendingPathComponent("clients/js/herald.mjs"))
        #expect(!WebSocketHandshake.clientScript.isEmpty)
        #expect(WebSocketHandshake.clientScript == Array(file), "run scripts/embed-js")
    }
}
