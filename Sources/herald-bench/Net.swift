// Blocking TCP sockets, OS threads and a monotonic clock: the plumbing under the workloads.
#if canImport(Glibc)
import Glibc
#endif

struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ s: String) { description = s }
}

func errnoText() -> String {
    String(cString: strerror(errno))
}

func exitProcess(_ code: Int32) -> Never {
    exit(code)
}

/// Prints a clear message on stderr and exits non-zero.
func fail(_ message: String) -> Never {
    writeStderr("herald-bench: error: \(message)\n")
    exit(1)
}

func writeStderr(_ s: String) {
    var s = s
    s.withUTF8 { u in
        _ = write(2, u.baseAddress, u.count)
    }
}

@inline(__always)
func nowNs() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
}

/// One blocking TCP connection. Only the file descriptor is stored, so it is Sendable.
final class Conn: Sendable {
    let fd: Int32

    init(fd: Int32) { self.fd = fd }

    static func connect(host: String, port: Int) throws -> Conn {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw BenchError("socket(): \(errnoText())") }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(port).bigEndian)
        guard inet_pton(AF_INET, host, &addr.sin_addr) == 1 else {
            close(fd)
            throw BenchError("--host must be an IPv4 address, got '\(host)'")
        }
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard rc == 0 else {
            let e = errnoText()
            close(fd)
            throw BenchError("cannot connect to \(host):\(port): \(e)")
        }
        let c = Conn(fd: fd)
        c.setNoDelay()
        return c
    }

    func setNoDelay() {
        var one: Int32 = 1
        _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    }

    func setBuffers(_ bytes: Int) {
        var v = Int32(bytes)
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, socklen_t(MemoryLayout<Int32>.size))
        _ = setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, socklen_t(MemoryLayout<Int32>.size))
    }

    /// Sets the receive timeout; a read that waits longer returns `.timeout`.
    func setReadTimeout(_ seconds: Double) {
        var tv = timeval()
        tv.tv_sec = Int(seconds)
        tv.tv_usec = Int((seconds - Double(Int(seconds))) * 1_000_000)
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    }

    enum ReadResult {
        case bytes(Int)
        case eof
        case timeout
        case failed(String)
    }

    @inline(__always)
    func read(into p: UnsafeMutableRawPointer, capacity: Int) -> ReadResult {
        while true {
            let n = Glibc.read(fd, p, capacity)
            if n > 0 { return .bytes(n) }
            if n == 0 { return .eof }
            let e = errno
            if e == EINTR { continue }
            if e == EAGAIN || e == EWOULDBLOCK { return .timeout }
            return .failed(String(cString: strerror(e)))
        }
    }

    func writeAll(_ p: UnsafeRawPointer, _ n: Int) throws {
        var off = 0
        while off < n {
            let w = Glibc.write(fd, p + off, n - off)
            if w > 0 {
                off += w
                continue
            }
            if w < 0 && errno == EINTR { continue }
            throw BenchError("write failed: \(w < 0 ? errnoText() : "connection closed")")
        }
    }

    func writeAll(_ bytes: [UInt8]) throws {
        try bytes.withUnsafeBytes { b in
            guard let base = b.baseAddress else { return }
            try writeAll(base, b.count)
        }
    }

    func shutdownBoth() {
        _ = shutdown(fd, Int32(SHUT_RDWR))
    }

    func closeFD() {
        _ = close(fd)
    }
}

/// A listening socket on 127.0.0.1 with an OS-chosen port (used by sink mode).
func listenLoopback() throws -> (fd: Int32, port: Int) {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw BenchError("socket(): \(errnoText())") }
    var one: Int32 = 1
    _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_port = 0
    addr.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
    var len = socklen_t(MemoryLayout<sockaddr_in>.size)
    let rc = withUnsafeMutablePointer(to: &addr) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa -> Int32 in
            if bind(fd, sa, len) != 0 { return -1 }
            if listen(fd, 4096) != 0 { return -1 }
            return getsockname(fd, sa, &len)
        }
    }
    guard rc == 0 else {
        let e = errnoText()
        close(fd)
        throw BenchError("sink listen on 127.0.0.1: \(e)")
    }
    return (fd, Int(UInt16(bigEndian: addr.sin_port)))
}

// MARK: - OS threads

private final class ThreadBody {
    let run: @Sendable () -> Void
    init(_ run: @escaping @Sendable () -> Void) { self.run = run }
}

struct OSThread: Sendable {
    let tid: pthread_t

    /// Starts `body` on a new pthread with a small stack (1000 subscriber threads are normal here).
    static func spawn(stackBytes: Int = 256 << 10, _ body: @escaping @Sendable () -> Void) -> OSThread {
        var attr = pthread_attr_t()
        pthread_attr_init(&attr)
        pthread_attr_setstacksize(&attr, stackBytes)
        defer { pthread_attr_destroy(&attr) }
        let ctx = Unmanaged.passRetained(ThreadBody(body)).toOpaque()
        var tid = pthread_t()
        let rc = pthread_create(&tid, &attr, { p in
            guard let p else { return nil }
            let b = Unmanaged<ThreadBody>.fromOpaque(p).takeRetainedValue()
            b.run()
            return nil
        }, ctx)
        if rc != 0 {
            Unmanaged<ThreadBody>.fromOpaque(ctx).release()
            fail("pthread_create failed: \(String(cString: strerror(rc))) (too many threads? try fewer --subs)")
        }
        return OSThread(tid: tid)
    }

    func join() {
        _ = pthread_join(tid, nil)
    }
}
