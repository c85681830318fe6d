// The scale workloads: what a broker costs per idle connection and per subscription (its RSS,
// read from /proc/PID/status), and how long it takes to confirm a million pipelined
// subscriptions. Same protocol table as the throughput workloads (Protocols.swift).
#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// Outcome of one scale run; the RSS fields are nil without `--pid`.
struct ScaleResult {
    var proto: String
    var workload: String
    /// Connections held (idle) or subscriptions confirmed (subscriptions).
    var items: Int
    /// Connections used to carry them.
    var conns: Int
    /// idle: connect + handshake of all connections; subscriptions: first request to last ack.
    var seconds: Double
    var rssBefore: Int?
    var rssAfter: Int?

    /// RSS growth per connection or per subscription, in bytes.
    var bytesPerItem: Double? {
        guard let b = rssBefore, let a = rssAfter, items > 0 else { return nil }
        return Double(a - b) / Double(items)
    }
}

// MARK: - process facts

/// The resident set size of process `pid` in bytes (VmRSS of /proc/PID/status).
func readRSS(pid: Int32) throws -> Int {
    let path = "/proc/\(pid)/status"
    let fd = open(path, O_RDONLY)
    guard fd >= 0 else { throw BenchError("cannot read \(path) (is --pid \(pid) the broker?): \(errnoText())") }
    defer { close(fd) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 4096)
    while true {
        let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if n <= 0 { break }
        bytes.append(contentsOf: chunk[0..<n])
    }
    let text = String(decoding: bytes, as: UTF8.self)
    for line in text.split(separator: "\n") where line.hasPrefix("VmRSS:") {
        let digits = line.dropFirst(6).filter { $0.isNumber }
        if let kb = Int(String(digits)), line.hasSuffix("kB") { return kb * 1024 }
    }
    throw BenchError("no VmRSS line in \(path) (a zombie or kernel thread?)")
}

/// Raises the soft RLIMIT_NOFILE to the hard limit; returns both as now in force.
func raiseFDLimit() -> (soft: Int, hard: Int) {
    var rl = rlimit()
    let res = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
    guard getrlimit(res, &rl) == 0 else { return (1024, 1024) }
    if rl.rlim_cur < rl.rlim_max {
        var want = rl
        want.rlim_cur = rl.rlim_max
        if setrlimit(res, &want) == 0 { rl = want }
    }
    // RLIM_INFINITY (all ones) does not import into Swift; any huge value means "unlimited".
    func clamp(_ v: rlim_t) -> Int { v > rlim_t(Int32.max) ? Int(Int32.max) : Int(v) }
    return (clamp(rl.rlim_cur), clamp(rl.rlim_max))
}

/// How many local ports connect() can pick from (net.ipv4.ip_local_port_range).
func ephemeralPortCount() -> Int? {
    let fd = open("/proc/sys/net/ipv4/ip_local_port_range", O_RDONLY)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var buf = [UInt8](repeating: 0, count: 64)
    let n = buf.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
    guard n > 0 else { return nil }
    let parts = String(decoding: buf[0..<n], as: UTF8.self).split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" })
    guard parts.count >= 2, let lo = Int(parts[0]), let hi = Int(parts[1]), hi >= lo else { return nil }
    return hi - lo + 1
}

/// Sleeps so the broker finishes any work triggered by the last frame before RSS is sampled.
func settle(_ seconds: Double = 0.5) {
    usleep(UInt32(seconds * 1_000_000))
}

/// One subscriptions-workload connection's outcome, written by its reader thread only.
final class SubscribeStat: @unchecked Sendable {
    var acks = 0
    var finishNs: UInt64 = 0
    var note: String?
    /// Written by the writer thread only.
    var writerNote: String?
    /// Set by the writer once every request is written: from then on the reader may answer
    /// keep-alive probes without interleaving its bytes into a half-written request.
    let writerDone = Atomic<Bool>(false)
}

extension Runner {
    func runScale() throws -> ScaleResult {
        switch o.workload {
        case .idle: return try idle()
        case .subscriptions: return try subscriptions()
        default: throw BenchError("\(o.workload.rawValue) is not a scale workload")
        }
    }

    func rss() throws -> Int? {
        guard let pid = o.pid else { return nil }
        return try readRSS(pid: pid)
    }

    // MARK: idle

    /// A connection still in its handshake: non-blocking, driven by poll().
    private struct Pending {
        let fd: Int32
        let index: Int
        var parser: B.Parser
        var helloSent = false
    }

    /// Opens `o.conns` connections, each completing its handshake, holds them while the broker's
    /// RSS is sampled, then closes them. Connects are non-blocking, at most `window` in flight
    /// (so the listen backlog never overflows into SYN retransmits), all on this thread.
    func idle() throws -> ScaleResult {
        let n = o.conns
        let (soft, hard) = raiseFDLimit()
        let need = n + 64
        if need > soft {
            throw BenchError("--conns \(n) needs about \(need) file descriptors but RLIMIT_NOFILE allows \(soft) "
                + "(hard limit \(hard)); raise it (`ulimit -n`, as root also the hard limit) or use fewer --conns")
        }
        if let ports = ephemeralPortCount(), n > ports {
            throw BenchError("--conns \(n) exceeds the \(ports) local ports of net.ipv4.ip_local_port_range")
        }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(port).bigEndian)
        guard inet_pton(AF_INET, o.host, &addr.sin_addr) == 1 else {
            throw BenchError("--host must be an IPv4 address, got '\(o.host)'")
        }

        let rssBefore = try rss()
        var open: [Int32] = []
        open.reserveCapacity(n)
        var pending: [Pending] = []
        defer {
            for p in pending { close(p.fd) }
            for fd in open { close(fd) }
        }
        // Below every peer's listen backlog (mosquitto: 100): an overflow costs a 1 s SYN retransmit.
        let window = 64
        let cap = 16 << 10
        let buf = UnsafeMutableRawPointer.allocate(byteCount: cap, alignment: 16)
        defer { buf.deallocate() }
        var next = 0
        let start = nowNs()
        var lastProgress = start
        var pfds: [pollfd] = []
        func context() -> String { "(\(open.count) of \(n) connections were established)" }

        while open.count < n {
            while pending.count < window && next < n {
                let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
                guard fd >= 0 else { throw BenchError("socket(): \(errnoText()) \(context())") }
                let rc = withUnsafePointer(to: &addr) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                    }
                }
                if rc != 0 && errno != EINPROGRESS {
                    let e = errnoText()
                    close(fd)
                    throw BenchError("cannot connect to \(o.host):\(port): \(e) \(context())")
                }
                pending.append(Pending(fd: fd, index: next, parser: B.newParser()))
                next += 1
            }
            pfds.removeAll(keepingCapacity: true)
            for p in pending {
                pfds.append(pollfd(fd: p.fd, events: Int16(p.helloSent ? POLLIN : POLLOUT), revents: 0))
            }
            let r = poll(&pfds, nfds_t(pfds.count), 250)
            if r < 0 && errno != EINTR { throw BenchError("poll(): \(errnoText())") }
            var keep: [Pending] = []
            keep.reserveCapacity(pending.count)
            for (k, item) in pending.enumerated() {
                var p = item
                if pfds[k].revents == 0 {
                    keep.append(p)
                    continue
                }
                if !p.helloSent {
                    var err: Int32 = 0
                    var len = socklen_t(MemoryLayout<Int32>.size)
                    _ = getsockopt(p.fd, SOL_SOCKET, SO_ERROR, &err, &len)
                    if err != 0 {
                        close(p.fd)
                        pending = keep + pending[(k + 1)...]
                        throw BenchError("connection \(p.index + 1) failed: \(String(cString: strerror(err))) \(context())")
                    }
                    var one: Int32 = 1
                    _ = setsockopt(p.fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
                    let hello = B.idleHello(clientIndex: p.index)
                    if !hello.isEmpty {
                        let w = hello.withUnsafeBytes { write(p.fd, $0.baseAddress, $0.count) }
                        if w != hello.count {
                            close(p.fd)
                            pending = keep + pending[(k + 1)...]
                            throw BenchError("connection \(p.index + 1): handshake write failed: \(w < 0 ? errnoText() : "short write") \(context())")
                        }
                    }
                    p.helloSent = true
                    keep.append(p)
                    continue
                }
                var failure: String?
                reading: while true {
                    let got = read(p.fd, buf, cap)
                    if got > 0 {
                        p.parser.feed(buf.assumingMemoryBound(to: UInt8.self), got)
                        if got < cap { break reading }
                    } else if got == 0 {
                        failure = "closed by the broker during the handshake (a connection limit?)"
                        break reading
                    } else if errno == EINTR {
                        continue
                    } else if errno == EAGAIN || errno == EWOULDBLOCK {
                        break reading
                    } else {
                        failure = "read failed: \(errnoText())"
                        break reading
                    }
                }
                if failure == nil && p.parser.errors > 0 { failure = "broker error: \(p.parser.errorText)" }
                if let failure {
                    close(p.fd)
                    pending = keep + pending[(k + 1)...]
                    throw BenchError("connection \(p.index + 1): \(failure) \(context())")
                }
                if B.idleReady(p.parser) {
                    open.append(p.fd)
                    lastProgress = nowNs()
                } else {
                    keep.append(p)
                }
            }
            pending = keep
            if nowNs() &- lastProgress > 30_000_000_000 {
                throw BenchError("no handshake completed for 30 s \(context())")
            }
        }
        let seconds = Double(nowNs() &- start) / 1e9
        settle()
        let rssAfter = try rss()
        // A connection the broker dropped meanwhile would make the RSS figure meaningless.
        let dropped = closedByPeer(open)
        if dropped > 0 {
            throw BenchError("the broker closed \(dropped) of the \(n) idle connections while they were held")
        }
        return ScaleResult(proto: B.label, workload: "idle", items: n, conns: n, seconds: seconds,
                           rssBefore: rssBefore, rssAfter: rssAfter)
    }

    /// Counts connections whose peer has closed (readable with a zero-byte peek).
    private func closedByPeer(_ fds: [Int32]) -> Int {
        var pfds = fds.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
        _ = poll(&pfds, nfds_t(pfds.count), 0)
        var closed = 0
        var byte: UInt8 = 0
        for p in pfds where p.revents != 0 {
            if p.revents & Int16(POLLERR | POLLHUP) != 0 {
                closed += 1
            } else if recv(p.fd, &byte, 1, Int32(MSG_PEEK) | Int32(MSG_DONTWAIT)) == 0 {
                closed += 1
            }
        }
        return closed
    }

    // MARK: subscriptions

    /// Subscribes to `o.subsTotal` distinct channels `bench.s.<i>` over `o.subConns`
    /// connections. Requests are generated up front, then each connection's writer thread sends
    /// them back to back while its reader thread counts the confirmations: the time is from the
    /// first request to the last confirmation.
    func subscriptions() throws -> ScaleResult {
        _ = raiseFDLimit()
        let n = o.subsTotal
        let k = o.subConns
        var sessions: [Session<B.Parser>] = []
        defer { for s in sessions { s.conn.closeFD() } }
        for c in 0..<k { sessions.append(try open(c)) }

        var requests: [[UInt8]] = []
        var targets: [Int] = []
        let batch = 100
        for c in 0..<k {
            let lo = c * n / k
            let hi = (c + 1) * n / k
            var bytes: [UInt8] = []
            var acks = 0
            var first = lo
            while first < hi {
                let end = min(hi, first + batch)
                let names = (first..<end).map { "bench.s.\($0)" }
                let (b, a) = B.bulkSubscribeFrames(names, firstSid: first - lo + 1, final: end == hi)
                bytes.append(contentsOf: b)
                acks += a
                first = end
            }
            requests.append(bytes)
            targets.append(sessions[c].parser.acks + acks)
        }

        settle(0.2)
        let rssBefore = try rss()
        var stats: [SubscribeStat] = []
        var threads: [OSThread] = []
        let start = nowNs()
        for c in 0..<k {
            let st = SubscribeStat()
            stats.append(st)
            let s = sessions[c]
            let target = targets[c]
            threads.append(OSThread.spawn { Self.countAcks(s, target: target, stat: st) })
            let req = requests[c]
            threads.append(OSThread.spawn {
                do {
                    try req.withUnsafeBytes { raw in
                        guard let base = raw.baseAddress else { return }
                        var off = 0
                        while off < raw.count {
                            let len = min(writeChunk, raw.count - off)
                            try s.conn.writeAll(base + off, len)
                            off += len
                        }
                    }
                } catch {
                    st.writerNote = "writer: \(error)"
                }
                st.writerDone.store(true, ordering: .releasing)
            })
        }
        for t in threads { t.join() }
        var end = start
        var confirmed = 0
        var notes: [String] = []
        for (c, st) in stats.enumerated() {
            confirmed += st.acks
            if st.finishNs > end { end = st.finishNs }
            if let note = st.note ?? st.writerNote { notes.append("connection \(c + 1): \(note) (\(st.acks) of \(targets[c]) confirmations)") }
        }
        if !notes.isEmpty { throw BenchError(notes.joined(separator: "; ")) }
        let seconds = Double(end &- start) / 1e9
        settle()
        let rssAfter = try rss()
        return ScaleResult(proto: B.label, workload: "subscriptions", items: n, conns: k, seconds: seconds,
                           rssBefore: rssBefore, rssAfter: rssAfter)
    }

    /// Reads confirmations until `target`; gives up after 60 s without a byte.
    static func countAcks(_ s: Session<B.Parser>, target: Int, stat: SubscribeStat) {
        var parser = s.parser
        let conn = s.conn
        conn.setReadTimeout(60)
        let cap = 1 << 20
        let buf = UnsafeMutableRawPointer.allocate(byteCount: cap, alignment: 64)
        defer { buf.deallocate() }
        let pong = B.pong
        loop: while parser.acks < target {
            switch conn.read(into: buf, capacity: cap) {
            case .bytes(let got):
                parser.feed(buf.assumingMemoryBound(to: UInt8.self), got)
                if parser.errors > 0 {
                    stat.note = "broker error: \(parser.errorText)"
                    break loop
                }
                if parser.pongsDue > 0 && stat.writerDone.load(ordering: .acquiring) {
                    if !pong.isEmpty { for _ in 0..<parser.pongsDue { try? conn.writeAll(pong) } }
                    parser.pongsDue = 0
                }
            case .timeout:
                stat.note = "no confirmation for 60 s"
                break loop
            case .eof:
                stat.note = "connection closed by the broker"
                break loop
            case .failed(let e):
                stat.note = "read failed: \(e)"
                break loop
            }
        }
        stat.finishNs = nowNs()
        stat.acks = parser.acks
    }
}
