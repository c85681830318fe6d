// Incremental, allocation-free (on the hot path) parsers of each broker's inbound byte stream.
// Each one counts deliveries, confirmations (acks), greetings, and the keep-alive probes it
// must answer; a delivery is counted when its last byte has arrived.
#if canImport(Glibc)
import Glibc
#endif

protocol WireParser: Sendable {
    /// Messages delivered to this connection.
    var deliveries: Int { get set }
    /// Confirmations of subscribe requests (Herald `ok`, NATS `PONG`, Redis `subscribe`, MQTT `SUBACK`).
    var acks: Int { get }
    /// Server hello (Herald `info`, NATS `INFO`, MQTT `CONNACK`, a top-level Redis `+PONG`).
    var greetings: Int { get }
    /// Keep-alive probes received and not yet answered (Herald `ping`, NATS `PING`).
    var pongsDue: Int { get set }
    var errors: Int { get }
    var errorText: String { get }
    mutating func feed(_ p: UnsafePointer<UInt8>, _ n: Int)
}

@inline(__always)
func word8(_ s: StaticString) -> UInt64 {
    precondition(s.utf8CodeUnitCount == 8)
    var w: UInt64 = 0
    let p = s.utf8Start
    for k in 0..<8 { w |= UInt64(p[k]) << (8 * UInt64(k)) }
    return w
}

@inline(__always)
func distance(_ from: UnsafePointer<UInt8>, _ to: UnsafeMutableRawPointer) -> Int {
    UnsafeRawPointer(from).distance(to: UnsafeRawPointer(to))
}

func textOf(_ p: UnsafePointer<UInt8>, _ n: Int, limit: Int = 300) -> String {
    let m = min(n, limit)
    return String(decoding: UnsafeBufferPointer(start: p, count: m), as: UTF8.self)
}

// MARK: - Herald: one JSON object per line, classified by its first 8 bytes.

struct HeraldParser: WireParser {
    var deliveries = 0
    var acks = 0
    var greetings = 0
    var pongsDue = 0
    var errors = 0
    var errorText = ""
    /// First bytes of a line that straddles two reads (little-endian), and how many.
    private var pre: UInt64 = 0
    private var preLen = 0

    private let kEvent = word8("{\"event\"")
    private let kPing = word8("{\"ping\":")
    private let kOk = word8("{\"ok\":\"s")   // {"ok":"sub"...
    private let kInfo = word8("{\"info\":")
    private let kError = word8("{\"error\"")

    @inline(__always)
    private mutating func classify(_ w: UInt64, _ line: UnsafePointer<UInt8>?, _ len: Int) {
        if w == kEvent {
            deliveries &+= 1
        } else if w == kPing {
            pongsDue += 1
        } else if w == kOk {
            acks += 1
        } else if w == kInfo {
            greetings += 1
        } else if w == kError {
            errors += 1
            if errorText.isEmpty {
                errorText = line.map { textOf($0, len) } ?? "{\"error\"… (split line)"
            }
        }
    }

    mutating func feed(_ p: UnsafePointer<UInt8>, _ n: Int) {
        var i = 0
        while i < n {
            let nl = memchr(p + i, 0x0A, n - i)
            if preLen == 0, let nl {
                let len = distance(p + i, nl)
                if len >= 8 {
                    // Fast path: the whole line is in this buffer.
                    classify(UnsafeRawPointer(p + i).loadUnaligned(as: UInt64.self), p + i, len)
                    i += len + 1
                    continue
                }
            }
            // Slow path: collect up to 8 first bytes of a line split across reads (or a short line).
            let segEnd = nl.map { distance(p + i, $0) } ?? (n - i)
            var j = 0
            while preLen < 8 && j < segEnd {
                pre |= UInt64(p[i + j]) << (8 * UInt64(preLen))
                preLen += 1
                j += 1
            }
            if nl != nil {
                if preLen == 8 { classify(pre, nil, 0) }
                pre = 0
                preLen = 0
                i += segEnd + 1
            } else {
                i = n
            }
        }
    }
}

// MARK: - NATS: control lines ended by CRLF; `MSG subj sid [reply] #bytes` then a payload.

struct NatsParser: WireParser {
    var deliveries = 0
    var acks = 0
    var greetings = 0
    var pongsDue = 0
    var errors = 0
    var errorText = ""
    private var carry: [UInt8] = []
    private var payloadLeft = 0
    private var inPayload = false

    mutating func feed(_ p: UnsafePointer<UInt8>, _ n: Int) {
        var i = 0
        while i < n {
            if inPayload {
                let take = min(payloadLeft, n - i)
                payloadLeft -= take
                i += take
                if payloadLeft == 0 {
                    inPayload = false
                    deliveries &+= 1
                }
                continue
            }
            guard let nl = memchr(p + i, 0x0A, n - i) else {
                carry.append(contentsOf: UnsafeBufferPointer(start: p + i, count: n - i))
                return
            }
            let len = distance(p + i, nl)
            if carry.isEmpty {
                line(p + i, len)
            } else {
                var c = carry
                carry = []
                c.append(contentsOf: UnsafeBufferPointer(start: p + i, count: len))
                c.withUnsafeBufferPointer { b in
                    if let base = b.baseAddress { line(base, b.count) }
                }
                c.removeAll(keepingCapacity: true)
                carry = c
            }
            i += len + 1
        }
    }

    @inline(__always)
    private mutating func line(_ l: UnsafePointer<UInt8>, _ len: Int) {
        var e = len
        if e > 0 && l[e - 1] == 13 { e -= 1 }
        guard e >= 4 else { return }
        let c0 = l[0]
        if c0 == UInt8(ascii: "M") && l[1] == UInt8(ascii: "S") && l[2] == UInt8(ascii: "G") && l[3] == 32 {
            var k = e - 1
            var v = 0
            var mult = 1
            while k > 3 && l[k] >= 48 && l[k] <= 57 {
                v += Int(l[k] - 48) * mult
                mult *= 10
                k -= 1
            }
            payloadLeft = v + 2
            inPayload = true
        } else if c0 == UInt8(ascii: "P") && l[1] == UInt8(ascii: "I") {
            pongsDue += 1
        } else if c0 == UInt8(ascii: "P") && l[1] == UInt8(ascii: "O") {
            acks += 1
        } else if c0 == UInt8(ascii: "I") {
            greetings += 1
        } else if c0 == UInt8(ascii: "-") {
            errors += 1
            if errorText.isEmpty { errorText = textOf(l, e) }
        }
    }
}

// MARK: - Redis RESP2: pub/sub pushes are flat arrays whose first bulk names the kind.

struct RedisParser: WireParser {
    var deliveries = 0
    var acks = 0
    var greetings = 0
    var pongsDue = 0
    var errors = 0
    var errorText = ""
    private var carry: [UInt8] = []
    private var bulkLeft = 0
    private var inBulk = false
    private var arrLeft = 0
    private var elemIdx = 0
    private var kindLen = -1

    mutating func feed(_ p: UnsafePointer<UInt8>, _ n: Int) {
        var i = 0
        while i < n {
            if inBulk {
                let take = min(bulkLeft, n - i)
                bulkLeft -= take
                i += take
                if bulkLeft == 0 {
                    inBulk = false
                    elementDone()
                }
                continue
            }
            guard let nl = memchr(p + i, 0x0A, n - i) else {
                carry.append(contentsOf: UnsafeBufferPointer(start: p + i, count: n - i))
                return
            }
            let len = distance(p + i, nl)
            if carry.isEmpty {
                line(p + i, len)
            } else {
                var c = carry
                carry = []
                c.append(contentsOf: UnsafeBufferPointer(start: p + i, count: len))
                c.withUnsafeBufferPointer { b in
                    if let base = b.baseAddress { line(base, b.count) }
                }
                c.removeAll(keepingCapacity: true)
                carry = c
            }
            i += len + 1
        }
    }

    @inline(__always)
    private func number(_ l: UnsafePointer<UInt8>, _ e: Int) -> Int {
        var k = 1
        var neg = false
        if k < e && l[k] == UInt8(ascii: "-") { neg = true; k += 1 }
        var v = 0
        while k < e && l[k] >= 48 && l[k] <= 57 {
            v = v * 10 + Int(l[k] - 48)
            k += 1
        }
        return neg ? -v : v
    }

    @inline(__always)
    private mutating func elementDone() {
        guard arrLeft > 0 else { return }
        arrLeft -= 1
        elemIdx += 1
        if arrLeft == 0 {
            // message (7) / pmessage (8) are deliveries; subscribe (9) / psubscribe (10) acks.
            switch kindLen {
            case 7, 8: deliveries &+= 1
            case 9, 10: acks += 1
            default: break
            }
        }
    }

    @inline(__always)
    private mutating func line(_ l: UnsafePointer<UInt8>, _ len: Int) {
        var e = len
        if e > 0 && l[e - 1] == 13 { e -= 1 }
        guard e >= 1 else { return }
        switch l[0] {
        case UInt8(ascii: "*"):
            let v = number(l, e)
            if v > 0 {
                arrLeft = v
                elemIdx = 0
                kindLen = -1
            } else {
                elementDone()
            }
        case UInt8(ascii: "$"):
            let v = number(l, e)
            if v < 0 {
                elementDone()
            } else {
                if arrLeft > 0 && elemIdx == 0 { kindLen = v }
                bulkLeft = v + 2
                inBulk = true
            }
        case UInt8(ascii: "-"):
            errors += 1
            if errorText.isEmpty { errorText = textOf(l, e) }
            elementDone()
        case UInt8(ascii: "+") where arrLeft == 0:
            // A top-level simple string (`+PONG` to the idle workload's PING) ends a handshake.
            greetings += 1
        default:
            elementDone()
        }
    }
}

// MARK: - MQTT 3.1.1: fixed header (type byte + varint length) then the body.

struct MqttParser: WireParser {
    var deliveries = 0
    var acks = 0
    var greetings = 0
    var pongsDue = 0
    var errors = 0
    var errorText = ""
    private var state = 0          // 0: type byte, 1: length varint, 2: body
    private var typeByte: UInt8 = 0
    private var remLen = 0
    private var shift = 0
    private var bodyLeft = 0
    private var body: [UInt8] = []

    mutating func feed(_ p: UnsafePointer<UInt8>, _ n: Int) {
        var i = 0
        while i < n {
            switch state {
            case 0:
                typeByte = p[i]
                i += 1
                remLen = 0
                shift = 0
                state = 1
            case 1:
                let b = p[i]
                i += 1
                remLen |= Int(b & 0x7F) << shift
                shift += 7
                if b & 0x80 == 0 {
                    bodyLeft = remLen
                    if typeByte >> 4 != 3 { body.removeAll(keepingCapacity: true) }
                    if bodyLeft == 0 { packetDone() } else { state = 2 }
                } else if shift > 21 {
                    errors += 1
                    if errorText.isEmpty { errorText = "malformed MQTT remaining length" }
                    state = 0
                }
            default:
                let take = min(bodyLeft, n - i)
                if typeByte >> 4 != 3 {
                    body.append(contentsOf: UnsafeBufferPointer(start: p + i, count: take))
                }
                bodyLeft -= take
                i += take
                if bodyLeft == 0 { packetDone() }
            }
        }
    }

    @inline(__always)
    private mutating func packetDone() {
        state = 0
        switch typeByte >> 4 {
        case 3:
            deliveries &+= 1
        case 2:  // CONNACK: flags, return code
            if body.count >= 2 && body[1] != 0 {
                errors += 1
                if errorText.isEmpty { errorText = "CONNACK refused, return code \(body[1])" }
            } else {
                greetings += 1
            }
        case 9:  // SUBACK: packet id, one return code per filter
            if body.count > 2 && body[2...].contains(0x80) {
                errors += 1
                if errorText.isEmpty { errorText = "SUBACK refused a subscription (0x80)" }
            }
            acks += 1
        default:
            break
        }
    }
}
