import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A TCP proxy on 127.0.0.1 that can stop forwarding without closing anything: a network
/// partition as a node sees it (its connections stay up, nothing arrives, writes pile up).
///
/// Each accepted connection gets its own connection to the upstream port and one thread per
/// direction. While `isStalled`, the threads neither read nor write, so the bytes wait in the
/// kernel's buffers and flow again, in order, after `resume()`.
public final class StallingProxy: @unchecked Sendable {
    /// The port clients connect to.
    public let port: Int
    private let upstream: Int
    private let listener: Int32
    private let stalled = Atomic<Bool>(false)
    private let accepted = Atomic<Int>(0)
    private let stalledFrom = Atomic<Int>(Int.max)
    private let stopped = Atomic<Bool>(false)
    private let sockets = Mutex<[Int32]>([])

    /// Listens on a free loopback port and forwards to `upstream` on 127.0.0.1.
    public init(upstream: Int) throws {
        self.upstream = upstream
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestRedisError.noPort }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = Self.loopback(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard bound, listen(fd, 64) == 0 else {
            close(fd)
            throw TestRedisError.noPort
        }
        listener = fd
        port = Int(UInt16(bigEndian: address.sin_port))
        let thread = Thread { [self] in acceptLoop() }
        thread.start()
    }

    deinit { stop() }

    /// Whether forwarding is stopped now.
    public var isStalled: Bool { stalled.load(ordering: .acquiring) }

    /// Stops forwarding in both directions; connections stay open.
    public func stall() { stalled.store(true, ordering: .releasing) }

    /// Stops forwarding on the connections accepted from the `first`th on (counted from 0:
    /// `connectionCount` before a node started stalls that node's alone).
    public func stall(connectionsFrom first: Int) { stalledFrom.store(first, ordering: .releasing) }

    /// How many connections were accepted so far.
    public var connectionCount: Int { accepted.load(ordering: .acquiring) }

    /// Forwards again on every connection, starting with what waited.
    public func resume() {
        stalled.store(false, ordering: .releasing)
        stalledFrom.store(Int.max, ordering: .releasing)
    }

    /// Closes the listener and every connection.
    public func stop() {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
        for fd in sockets.withLock({ $0 }) { shutdown(fd, Int32(SHUT_RDWR)) }
    }

    private func acceptLoop() {
        while !stopped.load(ordering: .acquiring) {
            let client = accept(listener, nil, nil)
            guard client >= 0 else { return }
            let server = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = Self.loopback(port: upstream)
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(server, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard server >= 0, connected == 0 else {
                close(client)
                if server >= 0 { close(server) }
                continue
            }
            sockets.withLock { $0 += [client, server] }
            let index = accepted.wrappingAdd(1, ordering: .acquiringAndReleasing).oldValue
            Thread { [self] in pump(from: client, to: server, index: index) }.start()
            Thread { [self] in pump(from: server, to: client, index: index) }.start()
        }
    }

    /// Whether connection `index` is stalled now.
    private func isStalled(_ index: Int) -> Bool {
        isStalled || index >= stalledFrom.load(ordering: .acquiring)
    }

    /// Copies bytes one way until either side closes, pausing while stalled.
    private func pump(from source: Int32, to target: Int32, index: Int) {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        defer {
            shutdown(source, Int32(SHUT_RDWR))
            shutdown(target, Int32(SHUT_RDWR))
        }
        while !stopped.load(ordering: .acquiring) {
            if isStalled(index) {
                usleep(5_000)
                continue
            }
            var ready = pollfd(fd: source, events: Int16(POLLIN), revents: 0)
            guard poll(&ready, 1, 50) >= 0 else { return }
            guard ready.revents != 0, !isStalled(index) else { continue }
            let count = read(source, &buffer, buffer.count)
            guard count > 0 else { return }
            var sent = 0
            while sent < count {
                // MSG_NOSIGNAL: a side that closed must not SIGPIPE the whole test run.
                let wrote = buffer[sent..<count].withUnsafeBytes { send(target, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                guard wrote > 0 else { return }
                sent += wrote
            }
        }
    }

    private static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }
}
