// The three workloads, generic over the broker protocol (specialised per protocol, no
// existentials on the hot path). Blocking sockets on OS threads, one per subscriber connection.
#if canImport(Glibc)
import Glibc
#endif

struct BenchResult {
    var proto: String
    var workload: String
    var subs: Int
    var size: Int
    var count: Int
    var expected: Int
    var delivered: Int
    var seconds: Double
    var msgsPerSec: Double
    var p50: Double?
    var p99: Double?
    var p999: Double?
    /// channels workload: the subscribe phase and the broker's RSS around it.
    var setup: ChannelSetup?
    var lost: Int { max(0, expected - delivered) }
}

/// What one receiving thread saw; written by that thread only, read after it is joined.
final class ReceiverStat: @unchecked Sendable {
    var delivered = 0
    var lastNs: UInt64 = 0
    var note: String?
}

/// Largest single write of the publisher: frames are batched into buffers of this size.
let writeChunk = 64 << 10

struct Runner<B: BrokerProtocol> {
    let o: Options
    let port: Int

    /// Connects client `index` to `port` (default: the runner's) and does the handshake.
    func open(_ index: Int, port: Int? = nil) throws -> Session<B.Parser> {
        let c = try Conn.connect(host: o.host, port: port ?? self.port)
        var s = Session(conn: c, parser: B.newParser())
        try B.handshake(&s, clientIndex: index)
        return s
    }

    func subscribe(_ s: inout Session<B.Parser>, _ channels: [String], firstSid: Int) throws {
        let (bytes, acks) = B.subscribeFrames(channels, firstSid: firstSid)
        let target = s.parser.acks + acks
        try s.conn.writeAll(bytes)
        try s.wait(for: "the broker's subscribe confirmation") { $0.acks >= target }
    }

    /// Reads until `expected` deliveries, EOF, or `idle` seconds without bytes.
    static func receive(_ s: Session<B.Parser>, expected: Int, idle: Double, bufBytes: Int, stat: ReceiverStat) {
        var parser = s.parser
        parser.deliveries = 0
        let conn = s.conn
        conn.setReadTimeout(idle)
        let buf = UnsafeMutableRawPointer.allocate(byteCount: bufBytes, alignment: 64)
        defer { buf.deallocate() }
        let bp = buf.assumingMemoryBound(to: UInt8.self)
        let pong = B.pong
        var last: UInt64 = 0
        loop: while parser.deliveries < expected {
            switch conn.read(into: buf, capacity: bufBytes) {
            case .bytes(let n):
                let before = parser.deliveries
                parser.feed(bp, n)
                if parser.deliveries != before { last = nowNs() }
                if parser.pongsDue > 0 {
                    if !pong.isEmpty {
                        for _ in 0..<parser.pongsDue { try? conn.writeAll(pong) }
                    }
                    parser.pongsDue = 0
                }
            case .timeout:
                break loop
            case .eof:
                stat.note = "connection closed by the broker after \(parser.deliveries) deliveries"
                break loop
            case .failed(let e):
                stat.note = "read failed after \(parser.deliveries) deliveries: \(e)"
                break loop
            }
        }
        if parser.errors > 0 && stat.note == nil { stat.note = "broker error: \(parser.errorText)" }
        stat.delivered = parser.deliveries
        stat.lastNs = last
    }

    /// Keeps the publisher's inbound side drained (Redis replies, pings, errors) until it closes.
    func startDrain(_ s: Session<B.Parser>, stat: ReceiverStat) -> OSThread {
        OSThread.spawn {
            var parser = s.parser
            let cap = 64 << 10
            let buf = UnsafeMutableRawPointer.allocate(byteCount: cap, alignment: 64)
            defer { buf.deallocate() }
            s.conn.setReadTimeout(0)
            loop: while true {
                switch s.conn.read(into: buf, capacity: cap) {
                case .bytes(let n):
                    parser.feed(buf.assumingMemoryBound(to: UInt8.self), n)
                case .timeout:
                    continue
                case .eof, .failed:
                    break loop
                }
            }
            if parser.errors > 0 { stat.note = "publisher got \(parser.errors) error(s), first: \(parser.errorText)" }
        }
    }

    /// Writes `count` frames, cycling through `frames`, in large batched writes.
    static func publish(_ conn: Conn, frames: [[UInt8]], count: Int) throws {
        var block: [UInt8] = []
        var offsets: [Int] = [0]
        if frames.count == 1 {
            let f = frames[0]
            let reps = max(1, writeChunk / max(1, f.count))
            for _ in 0..<reps {
                block.append(contentsOf: f)
                offsets.append(block.count)
            }
        } else {
            for f in frames {
                block.append(contentsOf: f)
                offsets.append(block.count)
            }
        }
        let perBlock = offsets.count - 1
        let full = count / perBlock
        let rest = count % perBlock
        try block.withUnsafeBytes { raw in
            guard let base = raw.baseAddress else { return }
            func emit(_ bytes: Int) throws {
                var off = 0
                while off < bytes {
                    let n = min(writeChunk, bytes - off)
                    try conn.writeAll(base + off, n)
                    off += n
                }
            }
            for _ in 0..<full { try emit(raw.count) }
            if rest > 0 { try emit(offsets[rest]) }
        }
    }

    static func bufferBytes(connections: Int) -> Int {
        max(64 << 10, min(1 << 20, (128 << 20) / max(1, connections)))
    }

    /// Starts receivers, publishes, joins, and sums up. `expected[k]` is for `subs[k]`.
    /// `delivered` runs once every receiver is done, before any connection closes (so the
    /// broker still holds every subscription).
    func measure(subs: [Session<B.Parser>], expected: [Int], pub: Session<B.Parser>, frames: [[UInt8]],
                 delivered whenDelivered: (() throws -> Void)? = nil) throws -> (delivered: Int, seconds: Double) {
        let pubStat = ReceiverStat()
        let drain = startDrain(pub, stat: pubStat)
        let bufBytes = Self.bufferBytes(connections: subs.count)
        let idle = o.idle
        var stats: [ReceiverStat] = []
        var threads: [OSThread] = []
        for (k, s) in subs.enumerated() {
            let st = ReceiverStat()
            stats.append(st)
            let exp = expected[k]
            threads.append(OSThread.spawn { Self.receive(s, expected: exp, idle: idle, bufBytes: bufBytes, stat: st) })
        }
        let start = nowNs()
        var pubError: String?
        do {
            try Self.publish(pub.conn, frames: frames, count: o.count)
        } catch {
            pubError = "\(error)"
        }
        let pubEnd = nowNs()
        for t in threads { t.join() }
        try whenDelivered?()
        pub.conn.shutdownBoth()
        drain.join()
        pub.conn.closeFD()
        for s in subs { s.conn.closeFD() }

        var delivered = 0
        var end = pubEnd
        var notes: [String: Int] = [:]
        for st in stats {
            delivered += st.delivered
            if st.lastNs > end { end = st.lastNs }
            if let n = st.note { notes[n, default: 0] += 1 }
        }
        if let e = pubError { writeStderr("herald-bench: warning: publisher: \(e)\n") }
        if let n = pubStat.note { writeStderr("herald-bench: warning: \(n)\n") }
        for (n, k) in notes.sorted(by: { $0.value > $1.value }).prefix(3) {
            writeStderr("herald-bench: warning: \(k) subscriber(s): \(n)\n")
        }
        return (delivered, Double(end - start) / 1e9)
    }

    // MARK: workloads

    func fanout() throws -> BenchResult {
        var subs: [Session<B.Parser>] = []
        for k in 0..<o.subs {
            var s = try open(k, port: o.subscriberPort(k, default: port))
            try subscribe(&s, ["bench.a"], firstSid: 1)
            subs.append(s)
        }
        let pub = try open(o.subs, port: o.publisherPort(default: port))
        let frame = B.publishFrame(channel: "bench.a", size: o.size)
        let expected = Array(repeating: o.count, count: o.subs)
        let (delivered, secs) = try measure(subs: subs, expected: expected, pub: pub, frames: [frame])
        let exp = o.count * o.subs
        return BenchResult(proto: B.label, workload: "fanout", subs: o.subs, size: o.size, count: o.count,
                           expected: exp, delivered: delivered, seconds: secs,
                           msgsPerSec: secs > 0 ? Double(delivered) / secs : 0)
    }

    /// One subscriber on `bench.a` and one publisher whose inbound side is drained: the two
    /// connections of the `latency` and `rate` workloads.
    func openPair() throws -> (sub: Session<B.Parser>, pub: Session<B.Parser>, pubStat: ReceiverStat, drain: OSThread) {
        var sub = try open(0, port: o.subscriberPort(0, default: port))
        try subscribe(&sub, ["bench.a"], firstSid: 1)
        let pub = try open(1, port: o.publisherPort(default: port))
        let pubStat = ReceiverStat()
        return (sub, pub, pubStat, startDrain(pub, stat: pubStat))
    }

    func latency() throws -> BenchResult {
        let (sub, pub, pubStat, drain) = try openPair()
        var parser = sub.parser
        parser.deliveries = 0
        let conn = sub.conn
        conn.setReadTimeout(o.idle)
        let cap = 1 << 20
        let buf = UnsafeMutableRawPointer.allocate(byteCount: cap, alignment: 64)
        defer { buf.deallocate() }
        let bp = buf.assumingMemoryBound(to: UInt8.self)
        let frame = B.publishFrame(channel: "bench.a", size: o.size)
        let pong = B.pong
        var samples: [UInt64] = []
        samples.reserveCapacity(o.count)
        var lost = 0
        var note: String?
        var measuredStart: UInt64 = 0
        let total = o.warmup + o.count
        var i = 0
        run: while i < total {
            if i == o.warmup { measuredStart = nowNs() }
            let target = parser.deliveries + 1
            let t0 = nowNs()
            try pub.conn.writeAll(frame)
            var got = true
            while parser.deliveries < target {
                switch conn.read(into: buf, capacity: cap) {
                case .bytes(let n):
                    parser.feed(bp, n)
                    if parser.pongsDue > 0 {
                        if !pong.isEmpty { for _ in 0..<parser.pongsDue { try conn.writeAll(pong) } }
                        parser.pongsDue = 0
                    }
                case .timeout:
                    got = false
                case .eof:
                    note = "subscriber connection closed by the broker"
                    lost += total - i
                    break run
                case .failed(let e):
                    note = "subscriber read failed: \(e)"
                    lost += total - i
                    break run
                }
                if !got { break }
            }
            let t1 = nowNs()
            if i >= o.warmup {
                if got { samples.append(t1 - t0) } else { lost += 1 }
            }
            i += 1
        }
        let measuredEnd = nowNs()
        pub.conn.shutdownBoth()
        drain.join()
        pub.conn.closeFD()
        conn.closeFD()
        if let n = note { writeStderr("herald-bench: warning: \(n)\n") }
        if let n = pubStat.note { writeStderr("herald-bench: warning: \(n)\n") }
        if parser.errors > 0 { writeStderr("herald-bench: warning: broker error: \(parser.errorText)\n") }
        samples.sort()
        func pct(_ q: Double) -> Double? { percentileMicros(samples, q) }
        let secs = Double(measuredEnd &- measuredStart) / 1e9
        let measuredCount = min(o.count, max(0, o.count - lost))
        return BenchResult(proto: B.label, workload: "latency", subs: 1, size: o.size, count: o.count,
                           expected: o.count, delivered: measuredCount, seconds: secs,
                           msgsPerSec: secs > 0 ? Double(samples.count) / secs : 0,
                           p50: pct(0.5), p99: pct(0.99), p999: pct(0.999))
    }

    func run() throws -> BenchResult {
        switch o.workload {
        case .fanout: return try fanout()
        case .channels: return try channels()
        case .latency: return try latency()
        case .rate: return try rate()
        case .idle, .subscriptions: throw BenchError("\(o.workload.rawValue) is a scale workload: use runScale()")
        case .set: return try runSetWorkload(o)
        case .ping: return try ping()
        }
    }

    /// The broker's own round trip: `count` sequential PINGs (after `warmup` unmeasured
    /// ones), each timed from its write to its PONG. Redis only (a top-level `+PONG` is what
    /// `RedisParser` counts as a greeting), to set a cluster's node-to-Redis hops beside the
    /// end-to-end latencies measured with the same generator.
    func ping() throws -> BenchResult {
        guard B.self == RedisProto.self else { throw BenchError("the ping workload is Redis only") }
        var s = try open(0)
        let frame: [UInt8] = Array("*1\r\n$4\r\nPING\r\n".utf8)
        let cap = 64 << 10
        let buf = UnsafeMutableRawPointer.allocate(byteCount: cap, alignment: 64)
        defer { buf.deallocate() }
        let bp = buf.assumingMemoryBound(to: UInt8.self)
        s.conn.setReadTimeout(o.idle)
        var samples: [UInt64] = []
        samples.reserveCapacity(o.count)
        let total = o.warmup + o.count
        var measuredStart: UInt64 = 0
        for i in 0..<total {
            if i == o.warmup { measuredStart = nowNs() }
            let target = s.parser.greetings + 1
            let t0 = nowNs()
            try s.conn.writeAll(frame)
            while s.parser.greetings < target {
                switch s.conn.read(into: buf, capacity: cap) {
                case .bytes(let n): s.parser.feed(bp, n)
                case .timeout: throw BenchError("no PONG within \(o.idle) s after \(i) round trips")
                case .eof: throw BenchError("connection closed by the broker after \(i) round trips")
                case .failed(let e): throw BenchError("read failed after \(i) round trips: \(e)")
                }
                if s.parser.errors > 0 { throw BenchError("broker error: \(s.parser.errorText)") }
            }
            if i >= o.warmup { samples.append(nowNs() - t0) }
        }
        let secs = Double(nowNs() &- measuredStart) / 1e9
        s.conn.closeFD()
        samples.sort()
        return BenchResult(proto: B.label, workload: "ping", subs: 0, size: 0, count: o.count,
                           expected: o.count, delivered: samples.count, seconds: secs,
                           msgsPerSec: secs > 0 ? Double(samples.count) / secs : 0,
                           p50: percentileMicros(samples, 0.5), p99: percentileMicros(samples, 0.99),
                           p999: percentileMicros(samples, 0.999))
    }
}

/// The `q` quantile (nearest rank) of sorted nanosecond samples, in microseconds.
func percentileMicros(_ sorted: [UInt64], _ q: Double) -> Double? {
    guard !sorted.isEmpty else { return nil }
    let rank = Int((q * Double(sorted.count)).rounded(.up)) - 1
    return Double(sorted[max(0, min(sorted.count - 1, rank))]) / 1000
}
