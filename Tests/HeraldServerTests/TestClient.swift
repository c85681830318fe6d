import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A blocking line client over TCP or a Unix socket, the way `nc` talks to the daemon.
final class TestClient {
    let fd: Int32
    private var buffer: [UInt8] = []

    enum ClientError: Error { case connect(Int32), timeout, closed, notJSON(String) }

    init(port: Int) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let status = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard status == 0 else { close(fd); throw ClientError.connect(errno) }
    }

    init(unixPath: String) throws {
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, byte) in path(unixPath).enumerated() where i < raw.count - 1 { raw[i] = byte }
        }
        let status = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard status == 0 else { close(fd); throw ClientError.connect(errno) }
    }

    private func path(_ text: String) -> [UInt8] { Array(text.utf8) }

    private var isClosed = false

    deinit { closeNow() }

    /// Closes the socket now (the daemon sees EOF).
    func closeNow() {
        guard !isClosed else { return }
        isClosed = true
        close(fd)
    }

    /// Sends raw bytes (MSG_NOSIGNAL: a daemon that closed or died cannot SIGPIPE the run).
    func send(bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return }
            offset += n
        }
    }

    /// Sends one line (a newline is added).
    func send(_ line: String) { send(bytes: Array((line + "\n").utf8)) }

    /// The next line, or throws on timeout / close.
    func line(timeout: Double = 5) throws -> String {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            if let newline = buffer.firstIndex(of: 10) {
                let line = String(decoding: buffer[..<newline], as: UTF8.self)
                buffer.removeSubrange(...newline)
                return line
            }
            let left = deadline.timeIntervalSinceNow
            guard left > 0 else { throw ClientError.timeout }
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, Int32(left * 1000) + 1) > 0 else { throw ClientError.timeout }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            guard n > 0 else { throw ClientError.closed }
            buffer.append(contentsOf: chunk[..<n])
        }
    }

    /// The bytes buffered and whatever the next read brings (at least one byte), for a
    /// client of another framing (`TestWebSocket`); throws on timeout or close.
    func rawBytes(timeout: Double = 5) throws -> [UInt8] {
        if !buffer.isEmpty {
            defer { buffer.removeAll() }
            return buffer
        }
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, Int32(timeout * 1000) + 1) > 0 else { throw ClientError.timeout }
        var chunk = [UInt8](repeating: 0, count: 65536)
        let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard n > 0 else { throw ClientError.closed }
        return Array(chunk[..<n])
    }

    /// The next frame, parsed.
    func frame(timeout: Double = 5) throws -> [String: Any] {
        let text = try line(timeout: timeout)
        guard let object = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else {
            throw ClientError.notJSON(text)
        }
        return object
    }

    /// The integer `data` of every event that arrives until `seconds` pass without a frame
    /// (frames without one are skipped).
    func eventData(quietFor seconds: Double) -> [Int] {
        var seen: [Int] = []
        while let frame = try? frame(timeout: seconds) { if let data = frame["data"] as? Int { seen.append(data) } }
        return seen
    }

    /// Sends a request and returns the next frame.
    func request(_ line: String) throws -> [String: Any] {
        send(line)
        return try frame()
    }

    /// Shuts the sending side only (`shutdown(SHUT_WR)`, what `nc -q1` does at the end of its
    /// input): the daemon reads EOF, and this side can still read its answers.
    func shutdownSending() {
        shutdown(fd, Int32(SHUT_WR))
    }

    /// Every line until the daemon closes the connection, or until `timeout` seconds pass.
    /// - Returns: the lines read, and whether the connection was closed (false: timed out).
    func linesUntilClosed(timeout: Double = 10) -> (lines: [String], closed: Bool) {
        let deadline = Date().addingTimeInterval(timeout)
        var lines: [String] = []
        while true {
            do {
                lines.append(try line(timeout: max(0.01, deadline.timeIntervalSinceNow)))
            } catch ClientError.closed {
                return (lines, true)
            } catch {
                return (lines, false)
            }
        }
    }

    /// Whether the daemon closed the connection within `timeout` (buffered lines are skipped).
    func isClosedByPeer(timeout: Double = 5) -> Bool {
        while true {
            do { _ = try line(timeout: timeout) } catch ClientError.closed { return true } catch { return false }
        }
    }
}
