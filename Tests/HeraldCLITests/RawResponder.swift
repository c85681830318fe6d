import Foundation
import HeraldTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// A responder speaking the wire protocol directly over TCP, so the CLI's `req` is tested
/// against the daemon alone (not against the client library it is built on): it subscribes to
/// one channel and answers every request with a fixed reply.
final class RawResponder: @unchecked Sendable {
    /// The responder's client id, from the daemon's `info`.
    let clientID: String
    private let fd: Int32
    private let seen = LockedValue<[String]>([])
    /// True until the reader thread closed the socket (only it closes, after its last read).
    private let open = LockedValue(true)
    private let thread: Thread

    /// The `data` of each request received, as raw JSON text.
    var requests: [String] { seen.value }

    init(port: Int, channel: String, reply: String) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.fd = fd
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            Glibc.close(fd)
            throw RawResponderError.io("connect failed")
        }
        let handle = FileHandle(fileDescriptor: fd, closeOnDealloc: false)
        var reader = LineReader(handle: handle)
        guard let info = reader.next(), let object = Self.object(info),
              let fields = object["info"] as? [String: Any], let client = fields["client"] as? String else {
            Glibc.close(fd)
            throw RawResponderError.io("no info frame")
        }
        clientID = client
        Self.send(#"{"op":"sub","ch":"\#(channel)","sub":"r","rid":1}"#, to: fd)
        guard let answer = reader.next(), answer.hasPrefix(#"{"ok":"sub""#) else {
            Glibc.close(fd)
            throw RawResponderError.io("sub refused")
        }
        let seen = self.seen
        let leftover = reader.pending
        let open = self.open
        thread = Thread {
            defer {
                open.withLock { isOpen in
                    Glibc.close(fd)
                    isOpen = false
                }
            }
            var reader = LineReader(handle: handle, pending: leftover)
            while let line = reader.next() {
                guard let event = Self.object(line), let token = event["reply"] as? String else { continue }
                if let range = line.range(of: #","data":"#) {
                    seen.withLock { $0.append(String(line[range.upperBound...].dropLast())) }
                }
                Self.send(#"{"op":"reply","to":"\#(token)","data":\#(reply)}"#, to: fd)
            }
        }
        thread.start()
    }

    /// Ends the connection; the reader thread sees end of file and closes the socket.
    func close() {
        open.withLock { isOpen in
            if isOpen { shutdown(fd, Int32(SHUT_RDWR)) }
        }
    }

    /// Writes one line; MSG_NOSIGNAL so a daemon that is gone cannot SIGPIPE the test run.
    private static func send(_ line: String, to fd: Int32) {
        let bytes = Array((line + "\n").utf8)
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if sent <= 0 { return }
            offset += sent
        }
    }

    private static func object(_ line: String) -> [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
    }
}

/// Why a raw responder could not start.
enum RawResponderError: Error {
    case io(String)
}

/// Reads `\n`-terminated lines from a file handle.
private struct LineReader {
    let handle: FileHandle
    var pending = Data()

    mutating func next() -> String? {
        while true {
            if let newline = pending.firstIndex(of: 10) {
                let line = String(decoding: pending[pending.startIndex..<newline], as: UTF8.self)
                pending.removeSubrange(pending.startIndex...newline)
                return line
            }
            let chunk = handle.availableData
            if chunk.isEmpty { return nil }
            pending.append(chunk)
        }
    }
}
