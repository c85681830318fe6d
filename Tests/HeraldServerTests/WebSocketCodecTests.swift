import Foundation
import Testing
@testable import HeraldServer

/// The WebSocket layer's pure parts (issue 34): frames decoded from any split of the
/// input, every violation with its RFC close code, the handshake's accept key (RFC 6455's
/// own example) and refusals.
struct WebSocketCodecTests {
    /// A masked client frame.
    private func frame(_ opcode: UInt8, _ payload: [UInt8], final: Bool = true, mask: [UInt8] = [1, 2, 3, 4],
                       masked: Bool = true, rsv: UInt8 = 0) -> [UInt8] {
        var out: [UInt8] = [(final ? 0x80 : 0) | rsv | opcode]
        let bit: UInt8 = masked ? 0x80 : 0
        if payload.count < 126 {
            out.append(bit | UInt8(payload.count))
        } else if payload.count < 65_536 {
            out += [bit | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
        } else {
            out.append(bit | 127)
            for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8((payload.count >> shift) & 0xFF)) }
        }
        if masked { out += mask }
        for (index, byte) in payload.enumerated() { out.append(masked ? byte ^ mask[index & 3] : byte) }
        return out
    }

    /// Everything `bytes` decode to, fed in pieces of `step` bytes; text pieces joined.
    private func decode(_ bytes: [UInt8], step: Int = 1 << 30) -> [WebSocketFrameDecoder.Output] {
        var decoder = WebSocketFrameDecoder()
        var outputs: [WebSocketFrameDecoder.Output] = []
        var at = 0
        while at < bytes.count {
            let end = min(at + step, bytes.count)
            bytes[at..<end].withUnsafeBytes { piece in
                decoder.feed(piece) { output in
                    if case .text(let more) = output, case .text(let had)? = outputs.last {
                        outputs[outputs.count - 1] = .text(had + more)
                    } else {
                        outputs.append(output)
                    }
                }
            }
            at = end
        }
        return outputs
    }

    @Test(arguments: [1, 2, 3, 7, 1 << 30])
    func fragmentedTextWithAPingBetweenDecodesTheSameAtAnySplit(step: Int) {
        let line = Array(#"{"op":"pub","ch":"é.x","data":1}"#.utf8)
        let bytes = frame(0x1, Array(line[..<10]), final: false) + frame(0x9, Array("hi".utf8))
            + frame(0x0, Array(line[10...]), final: true) + frame(0x8, [0x03, 0xE8])
        #expect(decode(bytes, step: step) == [.text(Array(line[..<10])), .ping(Array("hi".utf8)), .text(Array(line[10...])),
                                               .messageEnd, .close(code: 1000, reason: [])])
    }

    @Test func lengthsOf126AndMoreUseTheLongerForms() {
        for size in [125, 126, 65_535, 65_536, 200_000] {
            let payload = [UInt8](repeating: UInt8(ascii: "a"), count: size)
            #expect(decode(frame(0x1, payload), step: 4_096) == [.text(payload), .messageEnd], "\(size)")
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
            (frame(0x8, [0x03]), 1002),
            (frame(0x8, [0x03, 0xED]), 1002),
            (frame(0x8, [0x03, 0xE8, 0xFF]), 1007),
            ([0x81, 0xFF, 0x80, 0, 0, 0, 0, 0, 0, 0], 1002),
        ]
        for (bytes, code) in cases {
            let outputs = decode(bytes)
            guard case .fail(let got, _)? = outputs.last else {
                Issue.record("no failure for \(bytes.prefix(12)): \(outputs)")
                continue
            }
            #expect(got == code, "\(bytes.prefix(12))")
        }
    }

    @Test func nothingIsDecodedAfterAViolation() {
        let outputs = decode(frame(0x2, [1]) + frame(0x1, [65]))
        #expect(outputs.count == 1)
    }

    @Test func aUTF8CharacterSplitOverFramesIsValid() {
        let euro: [UInt8] = [0xE2, 0x82, 0xAC]
        let bytes = frame(0x1, [euro[0]], final: false) + frame(0x0, [euro[1]], final: false) + frame(0x0, [euro[2]])
        #expect(decode(bytes) == [.text(euro), .messageEnd])
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
