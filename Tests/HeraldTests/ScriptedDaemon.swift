import Foundation
import HeraldTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// A stand-in for `heraldd` on a loopback port, for frames a real daemon sends only under
/// cluster faults (`gap`, `node_reset`): it speaks just enough of the protocol for a client
/// to connect, subscribe and read values, records what the client sends, and sends whatever
/// lines a test gives it.
///
/// It answers `info` on accept, `hello`, `sub`, `get` (from `setValue`) and any other op
/// carrying a `rid` with a bare `ok`, unless `refuse` told it to answer an op with an error.
final class ScriptedDaemon: @unchecked Sendable {
    /// One frame the client sent.
    struct Received: Sendable, Equatable {
        /// Which connection it came on, from 1.
        let connection: Int
        let op: String
        let ch: String?
        let sub: String?
    }

    /// The port clients connect to.
    let port: Int
    private let listener: Int32
    private let lock = NSLock()
    private var connections: [Int32] = []
    private var frames: [Received] = []
    private var values: [String: (rev: Int, json: String)] = [:]
    private var refusals: [String: (code: String, remaining: Int)] = [:]
    private var stopped = false

    /// Listens on a free loopback port.
    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard fd >= 0, bound, listen(fd, 16) == 0 else {
            if fd >= 0 { close(fd) }
            throw TestRedisError.noPort
        }
        listener = fd
        port = Int(UInt16(bigEndian: address.sin_port))
        Thread { [self] in acceptLoop() }.start()
    }

    deinit { stop() }

    /// What the client sent so far, in order.
    var received: [Received] { lock.withLock { frames } }

    /// How many connections were accepted.
    var connectionCount: Int { lock.withLock { connections.count } }

    /// The value `get` answers for `channel` from now on (`json`: one JSON value).
    func setValue(_ json: String, rev: Int, at channel: String) {
        lock.withLock { values[channel] = (rev, json) }
    }

    /// Answers the next `times` frames of `op` (with a `rid`) with the error `code`.
    func refuse(_ op: String, with code: String, times: Int = .max) {
        lock.withLock { refusals[op] = (code, times) }
    }

    /// Sends `lines` (each without its newline) to the newest connection, in one write.
    func send(_ lines: String...) {
        guard let fd = lock.withLock({ connections.last }) else { return }
        write(fd, lines.map { $0 + "\n" }.joined())
    }

    /// Closes the newest connection (after what was sent to it).
    func dropNewest() {
        guard let fd = lock.withLock({ connections.last }) else { return }
        shutdown(fd, Int32(SHUT_RDWR))
    }

    /// Closes the listener and every connection.
    func stop() {
        let open = lock.withLock { () -> [Int32]? in
            if stopped { return nil }
            stopped = true
            return connections
        }
        guard let open else { return }
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
        for fd in open { shutdown(fd, Int32(SHUT_RDWR)) }
    }

    private func acceptLoop() {
        while true {
            let fd = accept(listener, nil, nil)
            guard fd >= 0 else { return }
            let number = lock.withLock { () -> Int in
                connections.append(fd)
                return connections.count
            }
            write(fd, #"{"info":{"server":"heraldd","version":"scripted","client":"c\#(number)","epoch":"e1","heartbeat_ms":0,"max_line":1048576}}"# + "\n")
            Thread { [self] in serve(fd, number: number) }.start()
        }
    }

    /// Reads lines until the client closes, answering each.
    private func serve(_ fd: Int32, number: Int) {
        var pending: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = read(fd, &buffer, buffer.count)
            guard count > 0 else { break }
            pending += buffer[0..<count]
            while let end = pending.firstIndex(of: UInt8(ascii: "\n")) {
                answer(Array(pending[..<end]), on: fd, connection: number)
                pending.removeSubrange(...end)
            }
        }
        close(fd)
    }

    private func answer(_ line: [UInt8], on fd: Int32, connection: Int) {
        guard let frame = (try? JSONSerialization.jsonObject(with: Data(line))) as? [String: Any],
              let op = frame["op"] as? String else { return }
        let ch = frame["ch"] as? String
        let sub = frame["sub"] as? String
        lock.withLock { frames.append(Received(connection: connection, op: op, ch: ch, sub: sub)) }
        guard let rid = (frame["rid"] as? NSNumber)?.intValue else { return }
        let (value, refusal) = lock.withLock { () -> ((rev: Int, json: String)?, String?) in
            guard let refusal = refusals[op], refusal.remaining > 0 else { return (ch.flatMap { values[$0] }, nil) }
            refusals[op]?.remaining -= 1
            return (nil, refusal.code)
        }
        if let refusal {
            write(fd, #"{"error":"\#(refusal)","message":"scripted refusal","op":"\#(op)","rid":\#(rid)}"# + "\n")
            return
        }
        switch op {
        case "hello":
            write(fd, #"{"ok":"hello","rid":\#(rid),"client":"c\#(connection)"}"# + "\n")
        case "sub":
            // A catch-up always reaches back (the script sends no history).
            let recovered = frame["since"] == nil ? "" : #","recovered":true"#
            write(fd, #"{"ok":"sub","rid":\#(rid),"sub":"\#(sub ?? "")","ch":"\#(ch ?? "")"\#(recovered)}"# + "\n")
        case "get":
            write(fd, #"{"ok":"get","rid":\#(rid),"ch":"\#(ch ?? "")","rev":\#(value?.rev ?? 0),"value":\#(value?.json ?? "null")}"# + "\n")
        default:
            write(fd, #"{"ok":"\#(op)","rid":\#(rid)}"# + "\n")
        }
    }

    private func write(_ fd: Int32, _ text: String) {
        let bytes = Array(text.utf8)
        lock.withLock {
            var sent = 0
            while sent < bytes.count {
                let wrote = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                guard wrote > 0 else { return }
                sent += wrote
            }
        }
    }
}
