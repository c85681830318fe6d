// `--proto sink`: an in-process no-op server speaking just enough of the Herald wire format
// to measure the generator's own ceiling. It greets with `{"info":…}`, confirms every `sub`,
// and forwards each read's complete `pub` lines to every subscriber as Herald deliveries,
// rewriting `{"op":"pub"` in place to the same-length `{"event":""` (no per-message copy).
#if canImport(Glibc)
import Glibc
#endif
import Synchronization

final class SinkServer: Sendable {
    let listenFd: Int32
    let port: Int
    private let subscribers = Mutex<[Int32]>([])

    private init(fd: Int32, port: Int) {
        listenFd = fd
        self.port = port
    }

    static func start() throws -> SinkServer {
        let (fd, port) = try listenLoopback()
        let s = SinkServer(fd: fd, port: port)
        _ = OSThread.spawn { s.acceptLoop() }
        return s
    }

    private func acceptLoop() {
        while true {
            let fd = accept(listenFd, nil, nil)
            if fd < 0 {
                if errno == EINTR || errno == ECONNABORTED { continue }
                return
            }
            let c = Conn(fd: fd)
            c.setNoDelay()
            _ = OSThread.spawn { self.serve(c) }
        }
    }

    private static let info: [UInt8] = Array(
        "{\"info\":{\"server\":\"herald-bench-sink\",\"version\":\"0\",\"proto\":1,\"client\":\"c0\",\"heartbeat_ms\":0}}\n".utf8)
    private static let okSub: [UInt8] = Array("{\"ok\":\"sub\",\"sub\":\"s1\",\"ch\":\"bench.a\"}\n".utf8)
    private static let eventPrefix: [UInt8] = Array("{\"event\":\"\"".utf8)   // 11 bytes, as `{"op":"pub"`

    private func forward(_ p: UnsafeRawPointer, _ n: Int) {
        guard n > 0 else { return }
        let fds = subscribers.withLock { $0 }
        for fd in fds { try? Conn(fd: fd).writeAll(p, n) }
    }

    private func serve(_ c: Conn) {
        try? c.writeAll(Self.info)
        let cap = 1 << 20
        let buf = UnsafeMutableRawPointer.allocate(byteCount: cap, alignment: 64)
        defer { buf.deallocate() }
        let bp = buf.assumingMemoryBound(to: UInt8.self)
        let kPub = word8("{\"op\":\"p")
        let kSub = word8("{\"op\":\"s")
        let ev = Self.eventPrefix
        var used = 0
        while true {
            guard case .bytes(let n) = c.read(into: buf + used, capacity: cap - used) else { break }
            let total = used + n
            var i = 0
            var runStart = 0
            while i < total, let nl = memchr(bp + i, 0x0A, total - i) {
                let len = distance(bp + i, nl)
                let w: UInt64 = len >= 8 ? UnsafeRawPointer(bp + i).loadUnaligned(as: UInt64.self) : 0
                if len >= 11 && w == kPub {
                    for k in 0..<11 { bp[i + k] = ev[k] }
                } else {
                    forward(buf + runStart, i - runStart)
                    if w == kSub {
                        subscribers.withLock { if !$0.contains(c.fd) { $0.append(c.fd) } }
                        try? c.writeAll(Self.okSub)
                    }
                    runStart = i + len + 1
                }
                i += len + 1
            }
            forward(buf + runStart, i - runStart)
            used = total - i
            if used > 0 {
                if used == cap { used = 0 } else { memmove(buf, buf + i, used) }
            }
        }
        subscribers.withLock { $0.removeAll { $0 == c.fd } }
    }
}
