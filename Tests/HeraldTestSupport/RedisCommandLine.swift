import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// One Redis command over a fresh blocking loopback connection, for tests that drive
/// redis-server and redis-sentinel (`ROLE`, `INFO replication`, `SENTINEL …`).
public enum RedisCommandLine {
    /// A parsed reply: strings, integers and errors as text, arrays nested, nil as `nil`.
    public indirect enum Reply: Equatable, Sendable {
        /// A bulk or status string.
        case text(String)
        /// An integer.
        case integer(Int)
        /// An error reply.
        case error(String)
        /// An array.
        case array([Reply])
        /// A nil bulk string or array.
        case null

        /// The text of a string reply.
        public var text: String? {
            if case .text(let value) = self { return value }
            return nil
        }

        /// The elements of an array reply.
        public var elements: [Reply]? {
            if case .array(let value) = self { return value }
            return nil
        }
    }

    /// Runs `arguments` on 127.0.0.1:`port`; nil when nothing answers within `timeout` s.
    public static func run(port: Int, _ arguments: [String], timeout: Double = 2) -> Reply? {
        run(port: port, password: nil, arguments, timeout: timeout)
    }

    /// Runs `arguments` on 127.0.0.1:`port` after `AUTH password` (when given); nil when
    /// nothing answers within `timeout` s or the password is refused.
    public static func run(port: Int, password: String?, _ arguments: [String], timeout: Double = 2) -> Reply? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var wait = timeval(tv_sec: Int(timeout), tv_usec: Int((timeout - Double(Int(timeout))) * 1_000_000))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &wait, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { return nil }
        let commands = (password.map { [["AUTH", $0]] } ?? []) + [arguments]
        var request = ""
        for command in commands {
            request += "*\(command.count)\r\n"
            for argument in command { request += "$\(argument.utf8.count)\r\n\(argument)\r\n" }
        }
        let bytes = Array(request.utf8)
        guard write(fd, bytes, bytes.count) == bytes.count else { return nil }
        var reader = Reader(fd: fd)
        if password != nil {
            guard let answer = reader.reply(), case .text = answer else { return nil }
        }
        return reader.reply()
    }

    /// Reads RESP from a socket, refilling its buffer as needed.
    private struct Reader {
        /// The connected socket.
        let fd: Int32
        /// Bytes read and not parsed yet (from `at`).
        var buffer: [UInt8] = []
        /// Where parsing is in `buffer`.
        var at = 0

        /// Reads more; false on EOF, error or timeout.
        mutating func fill() -> Bool {
            var chunk = [UInt8](repeating: 0, count: 16_384)
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            guard count > 0 else { return false }
            buffer.append(contentsOf: chunk[..<count])
            return true
        }

        /// The next CRLF-terminated line.
        mutating func line() -> String? {
            while true {
                if let end = buffer[at...].firstIndex(of: 10), end > at, buffer[end - 1] == 13 {
                    let text = String(decoding: buffer[at..<(end - 1)], as: UTF8.self)
                    at = end + 1
                    return text
                }
                guard fill() else { return nil }
            }
        }

        /// The next whole reply.
        mutating func reply() -> Reply? {
            guard let header = line(), let kind = header.first else { return nil }
            let rest = String(header.dropFirst())
            switch kind {
            case "+": return .text(rest)
            case "-": return .error(rest)
            case ":": return Int(rest).map(Reply.integer)
            case "$":
                guard let count = Int(rest) else { return nil }
                if count < 0 { return .null }
                while buffer.count - at < count + 2 { guard fill() else { return nil } }
                let text = String(decoding: buffer[at..<(at + count)], as: UTF8.self)
                at += count + 2
                return .text(text)
            case "*":
                guard let count = Int(rest) else { return nil }
                if count < 0 { return .null }
                var items: [Reply] = []
                for _ in 0..<count {
                    guard let item = reply() else { return nil }
                    items.append(item)
                }
                return .array(items)
            default: return nil
            }
        }
    }
}
