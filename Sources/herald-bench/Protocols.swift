// One code path, four wire protocols: what differs per broker is only this table of
// frame encoders plus the inbound parser (Parsers.swift).
#if canImport(Glibc)
import Glibc
#endif

protocol BrokerProtocol: Sendable {
    associatedtype Parser: WireParser
    static var label: String { get }
    /// A subscription pattern matching every channel.
    static var wildcard: String { get }
    static func newParser() -> Parser
    /// Connect-time handshake (greeting and/or CONNECT).
    static func handshake(_ s: inout Session<Parser>, clientIndex: Int) throws
    /// Frames subscribing to `channels`, and how many acks the broker will send for them.
    static func subscribeFrames(_ channels: [String], firstSid: Int) -> (bytes: [UInt8], acks: Int)
    /// One publish frame carrying a payload of `size` bytes.
    static func publishFrame(channel: String, size: Int) -> [UInt8]
    /// The answer to a server keep-alive probe.
    static var pong: [UInt8] { get }
    /// idle workload: what a client sends as soon as its TCP connect completes (its whole half
    /// of the handshake, so no per-connection state machine is needed beyond the parser).
    static func idleHello(clientIndex: Int) -> [UInt8]
    /// idle workload: whether the broker's half of the handshake has arrived.
    static func idleReady(_ p: Parser) -> Bool
    /// subscriptions workload: one batch of a long pipelined run; `final` marks the last batch
    /// (NATS confirms nothing per SUB, so only the final batch carries its PING).
    static func bulkSubscribeFrames(_ channels: [String], firstSid: Int, final: Bool) -> (bytes: [UInt8], acks: Int)
}

extension BrokerProtocol {
    static func bulkSubscribeFrames(_ channels: [String], firstSid: Int, final: Bool) -> (bytes: [UInt8], acks: Int) {
        subscribeFrames(channels, firstSid: firstSid)
    }
}

extension Array where Element == UInt8 {
    mutating func add(_ s: String) { append(contentsOf: s.utf8) }
}

/// A connection plus its parser, used for the blocking control phase (handshake, subscribe).
struct Session<P: WireParser>: Sendable {
    let conn: Conn
    var parser: P

    /// Reads and parses until `done` holds; throws on EOF, timeout or a broker error.
    mutating func wait(for what: String, timeout: Double = 10, _ done: (P) -> Bool) throws {
        if done(parser) { return }
        let deadline = nowNs() &+ UInt64(timeout * 1e9)
        let cap = 64 << 10
        let buf = UnsafeMutableRawPointer.allocate(byteCount: cap, alignment: 16)
        defer { buf.deallocate() }
        conn.setReadTimeout(0.25)
        defer { conn.setReadTimeout(0) }
        while true {
            if parser.errors > 0 { throw BenchError("broker error while waiting for \(what): \(parser.errorText)") }
            if done(parser) { return }
            if nowNs() > deadline { throw BenchError("timed out waiting for \(what)") }
            switch conn.read(into: buf, capacity: cap) {
            case .bytes(let n):
                parser.feed(buf.assumingMemoryBound(to: UInt8.self), n)
            case .timeout:
                continue
            case .eof:
                throw BenchError("connection closed by the broker while waiting for \(what)")
            case .failed(let e):
                throw BenchError("read failed while waiting for \(what): \(e)")
            }
        }
    }
}

// MARK: - Herald

enum HeraldProto: BrokerProtocol {
    static let label = "herald"
    static let wildcard = ">"
    static func newParser() -> HeraldParser { HeraldParser() }

    static func handshake(_ s: inout Session<HeraldParser>, clientIndex: Int) throws {
        try s.wait(for: "the {\"info\":…} greeting") { $0.greetings >= 1 }
    }

    static func subscribeFrames(_ channels: [String], firstSid: Int) -> (bytes: [UInt8], acks: Int) {
        subscribeFrames(channels, firstSid: firstSid, options: "")
    }

    /// `sub` frames with `options` (`,"key":value…`) added to each.
    static func subscribeFrames(_ channels: [String], firstSid: Int, options: String) -> (bytes: [UInt8], acks: Int) {
        var b: [UInt8] = []
        for (k, ch) in channels.enumerated() {
            b.add("{\"op\":\"sub\",\"ch\":\"\(ch)\"\(options),\"rid\":\(firstSid + k)}\n")
        }
        return (b, channels.count)
    }

    static func publishFrame(channel: String, size: Int) -> [UInt8] {
        var b: [UInt8] = []
        b.add("{\"op\":\"pub\",\"ch\":\"\(channel)\",\"data\":\"")
        b.append(contentsOf: repeatElement(UInt8(ascii: "x"), count: max(0, size - 2)))
        b.add("\"}\n")
        return b
    }

    static let pong: [UInt8] = Array("{\"op\":\"pong\"}\n".utf8)

    // The server speaks first: the `{"info":…}` line means the session exists.
    static func idleHello(clientIndex: Int) -> [UInt8] { [] }
    static func idleReady(_ p: HeraldParser) -> Bool { p.greetings >= 1 }
}

// MARK: - NATS

enum NatsProto: BrokerProtocol {
    static let label = "nats"
    static let wildcard = ">"
    static func newParser() -> NatsParser { NatsParser() }

    static func handshake(_ s: inout Session<NatsParser>, clientIndex: Int) throws {
        try s.wait(for: "the NATS INFO greeting") { $0.greetings >= 1 }
        try s.conn.writeAll(Array("CONNECT {\"verbose\":false,\"pedantic\":false}\r\n".utf8))
    }

    static func subscribeFrames(_ channels: [String], firstSid: Int) -> (bytes: [UInt8], acks: Int) {
        var b: [UInt8] = []
        for (k, ch) in channels.enumerated() { b.add("SUB \(ch) \(firstSid + k)\r\n") }
        b.add("PING\r\n")
        return (b, 1)
    }

    static func publishFrame(channel: String, size: Int) -> [UInt8] {
        var b: [UInt8] = []
        b.add("PUB \(channel) \(size)\r\n")
        b.append(contentsOf: repeatElement(UInt8(ascii: "x"), count: size))
        b.add("\r\n")
        return b
    }

    static let pong: [UInt8] = Array("PONG\r\n".utf8)

    // CONNECT may precede the server's INFO; the PONG proves the CONNECT was processed.
    static func idleHello(clientIndex: Int) -> [UInt8] {
        Array("CONNECT {\"verbose\":false,\"pedantic\":false}\r\nPING\r\n".utf8)
    }
    static func idleReady(_ p: NatsParser) -> Bool { p.greetings >= 1 && p.acks >= 1 }

    static func bulkSubscribeFrames(_ channels: [String], firstSid: Int, final: Bool) -> (bytes: [UInt8], acks: Int) {
        var b: [UInt8] = []
        for (k, ch) in channels.enumerated() { b.add("SUB \(ch) \(firstSid + k)\r\n") }
        if final { b.add("PING\r\n") }
        return (b, final ? 1 : 0)
    }
}

/// Herald with `compact:true` subscriptions: events without `sub` and `from`
/// (docs/protocol.md, "Subscriptions and events"); everything else is `HeraldProto`'s.
enum HeraldCompactProto: BrokerProtocol {
    static let label = "herald-compact"
    static let wildcard = HeraldProto.wildcard
    static func newParser() -> HeraldParser { HeraldProto.newParser() }

    static func handshake(_ s: inout Session<HeraldParser>, clientIndex: Int) throws {
        try HeraldProto.handshake(&s, clientIndex: clientIndex)
    }

    static func subscribeFrames(_ channels: [String], firstSid: Int) -> (bytes: [UInt8], acks: Int) {
        HeraldProto.subscribeFrames(channels, firstSid: firstSid, options: #","compact":true"#)
    }

    static func publishFrame(channel: String, size: Int) -> [UInt8] {
        HeraldProto.publishFrame(channel: channel, size: size)
    }

    static let pong = HeraldProto.pong
    static func idleHello(clientIndex: Int) -> [UInt8] { HeraldProto.idleHello(clientIndex: clientIndex) }
    static func idleReady(_ p: HeraldParser) -> Bool { HeraldProto.idleReady(p) }
}

// MARK: - Redis (RESP2)

enum RedisProto: BrokerProtocol {
    static let label = "redis"
    static let wildcard = "*"
    static func newParser() -> RedisParser { RedisParser() }

    static func handshake(_ s: inout Session<RedisParser>, clientIndex: Int) throws {}

    private static func bulk(_ b: inout [UInt8], _ s: String) {
        b.add("$\(s.utf8.count)\r\n\(s)\r\n")
    }

    static func subscribeFrames(_ channels: [String], firstSid: Int) -> (bytes: [UInt8], acks: Int) {
        var b: [UInt8] = []
        let pattern = channels.count == 1 && channels[0] == wildcard
        b.add("*\(channels.count + 1)\r\n")
        bulk(&b, pattern ? "PSUBSCRIBE" : "SUBSCRIBE")
        for ch in channels { bulk(&b, ch) }
        return (b, channels.count)
    }

    static func publishFrame(channel: String, size: Int) -> [UInt8] {
        var b: [UInt8] = []
        b.add("*3\r\n")
        bulk(&b, "PUBLISH")
        bulk(&b, channel)
        b.add("$\(size)\r\n")
        b.append(contentsOf: repeatElement(UInt8(ascii: "x"), count: size))
        b.add("\r\n")
        return b
    }

    // RESP2 servers never probe clients.
    static let pong: [UInt8] = []

    // Redis sends no greeting; a PING round trip makes it read from (and set up) the client.
    static func idleHello(clientIndex: Int) -> [UInt8] { Array("*1\r\n$4\r\nPING\r\n".utf8) }
    static func idleReady(_ p: RedisParser) -> Bool { p.greetings >= 1 }
}

// MARK: - MQTT 3.1.1, clean session, QoS 0

enum MqttProto: BrokerProtocol {
    static let label = "mqtt"
    static let wildcard = "#"
    static func newParser() -> MqttParser { MqttParser() }

    static func varint(_ b: inout [UInt8], _ v: Int) {
        var x = v
        repeat {
            var d = UInt8(x & 0x7F)
            x >>= 7
            if x > 0 { d |= 0x80 }
            b.append(d)
        } while x > 0
    }

    static func str(_ b: inout [UInt8], _ s: String) {
        let u = Array(s.utf8)
        b.append(UInt8(u.count >> 8))
        b.append(UInt8(u.count & 0xFF))
        b.append(contentsOf: u)
    }

    static func handshake(_ s: inout Session<MqttParser>, clientIndex: Int) throws {
        try s.conn.writeAll(connectPacket(clientIndex: clientIndex))
        try s.wait(for: "MQTT CONNACK") { $0.greetings >= 1 }
    }

    static func idleHello(clientIndex: Int) -> [UInt8] { connectPacket(clientIndex: clientIndex) }
    static func idleReady(_ p: MqttParser) -> Bool { p.greetings >= 1 }

    /// CONNECT, clean session, keep-alive off, a client id unique per process and index.
    static func connectPacket(clientIndex: Int) -> [UInt8] {
        var body: [UInt8] = []
        str(&body, "MQTT")
        body.append(4)            // protocol level 3.1.1
        body.append(0x02)         // clean session
        body.append(0)            // keep-alive 0: disabled (runs are short; subscribers never write)
        body.append(0)
        str(&body, "hb-\(getpid())-\(clientIndex)")
        var pkt: [UInt8] = [0x10]
        varint(&pkt, body.count)
        pkt.append(contentsOf: body)
        return pkt
    }

    static func subscribeFrames(_ channels: [String], firstSid: Int) -> (bytes: [UInt8], acks: Int) {
        var out: [UInt8] = []
        var packets = 0
        var start = 0
        while start < channels.count {
            let end = min(channels.count, start + 100)
            var body: [UInt8] = []
            let pid = (firstSid + packets) % 65535 + 1
            body.append(UInt8(pid >> 8))
            body.append(UInt8(pid & 0xFF))
            for ch in channels[start..<end] {
                str(&body, ch)
                body.append(0)    // QoS 0
            }
            out.append(0x82)
            varint(&out, body.count)
            out.append(contentsOf: body)
            packets += 1
            start = end
        }
        return (out, packets)
    }

    static func publishFrame(channel: String, size: Int) -> [UInt8] {
        var b: [UInt8] = [0x30]
        varint(&b, 2 + channel.utf8.count + size)
        str(&b, channel)
        b.append(contentsOf: repeatElement(UInt8(ascii: "x"), count: size))
        return b
    }

    static let pong: [UInt8] = []
}
