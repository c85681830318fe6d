// `--proto herald-ws`: Herald over its WebSocket listener (issue 34), to set beside the TCP
// path: the same lines, each sent as a masked text frame (mask key 0: the XOR is a no-op,
// so the generator pays nothing for it; the daemon unmasks as always), and the daemon's
// frames unwrapped before `HeraldParser` reads the lines.

enum HeraldWebSocketProto: BrokerProtocol {
    static let label = "herald-ws"
    static let wildcard = HeraldProto.wildcard
    static func newParser() -> WebSocketParser { WebSocketParser() }

    /// The upgrade request (any path; no `Origin`, as a tool's).
    static let upgrade: [UInt8] = Array(("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n").utf8)

    static func handshake(_ s: inout Session<WebSocketParser>, clientIndex: Int) throws {
        try s.conn.writeAll(upgrade)
        try s.wait(for: "the 101 and the {\"info\":…} greeting") { $0.greetings >= 1 }
    }

    static func subscribeFrames(_ channels: [String], firstSid: Int) -> (bytes: [UInt8], acks: Int) {
        let (lines, acks) = HeraldProto.subscribeFrames(channels, firstSid: firstSid)
        return (frame(lines), acks)
    }

    static func publishFrame(channel: String, size: Int) -> [UInt8] {
        frame(HeraldProto.publishFrame(channel: channel, size: size))
    }

    static let pong: [UInt8] = frame(HeraldProto.pong)

    static func idleHello(clientIndex: Int) -> [UInt8] { upgrade }
    static func idleReady(_ p: WebSocketParser) -> Bool { p.greetings >= 1 }

    /// One masked text frame holding `payload` (whole lines), with the mask key 0.
    static func frame(_ payload: [UInt8]) -> [UInt8] {
        var out: [UInt8] = [0x81]
        if payload.count < 126 {
            out.append(0x80 | UInt8(payload.count))
        } else if payload.count < 65_536 {
            out += [0x80 | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
        } else {
            out.append(0x80 | 127)
            for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8((payload.count >> shift) & 0xFF)) }
        }
        out += [0, 0, 0, 0]
        return out + payload
    }
}

/// The daemon's side: the HTTP head of the 101 skipped, then unmasked frames whose text
/// payloads go to `HeraldParser` as they come (a line may straddle frames or reads).
struct WebSocketParser: WireParser {
    private var inner = HeraldParser()
    var deliveries: Int {
        get { inner.deliveries }
        set { inner.deliveries = newValue }
    }
    var acks: Int { inner.acks }
    var greetings: Int { inner.greetings }
    var pongsDue: Int {
        get { inner.pongsDue }
        set { inner.pongsDue = newValue }
    }
    var errors: Int { inner.errors + (closed ? 1 : 0) }
    var errorText: String { closed ? "the daemon sent a close frame" : inner.errorText }
    /// How much of `\r\n\r\n` ended the bytes seen so far in the HTTP head (4: past it).
    private var headMatched = 0
    private var header: [UInt8] = []
    private var remaining = 0
    private var isText = false
    private var closed = false

    mutating func feed(_ p: UnsafePointer<UInt8>, _ n: Int) {
        var i = 0
        while i < n {
            if headMatched < 4 {
                let byte = p[i]
                i += 1
                let want: UInt8 = headMatched % 2 == 0 ? 13 : 10
                headMatched = byte == want ? headMatched + 1 : (byte == 13 ? 1 : 0)
                continue
            }
            if remaining > 0 {
                let take = min(remaining, n - i)
                if isText { inner.feed(p + i, take) }
                i += take
                remaining -= take
                continue
            }
            header.append(p[i])
            i += 1
            guard header.count >= 2 else { continue }
            let short = Int(header[1] & 0x7F)
            let needed = short == 126 ? 4 : short == 127 ? 10 : 2
            guard header.count == needed else { continue }
            remaining = short == 126 ? Int(header[2]) << 8 | Int(header[3])
                : short == 127 ? header[2..<10].reduce(0) { $0 << 8 | Int($1) } : short
            let opcode = header[0] & 0x0F
            isText = opcode == 1 || opcode == 0
            if opcode == 8 { closed = true }
            header.removeAll(keepingCapacity: true)
        }
    }
}
