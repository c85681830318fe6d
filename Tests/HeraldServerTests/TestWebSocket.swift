import Foundation

/// A blocking WebSocket client for the tests (issue 34): the upgrade request by hand, masked
/// frames out, frames in, over `TestClient`'s socket. Bad frames on purpose are sent with
/// `send(bytes:)`.
final class TestWebSocket {
    let socket: TestClient
    /// The upgrade answer's head (`HTTP/1.1 101 …` and the fields).
    private(set) var head = ""
    private var buffer: [UInt8] = []

    enum WebSocketError: Error { case refused(String), badFrame, notText(UInt8), notJSON(String) }

    /// A frame from the daemon.
    struct Frame: Equatable {
        let opcode: UInt8
        let payload: [UInt8]
        /// A close frame's code.
        var closeCode: UInt16? { opcode == 8 && payload.count >= 2 ? UInt16(payload[0]) << 8 | UInt16(payload[1]) : nil }
    }

    /// Connects and upgrades (`origin`: the `Origin` header, as a browser sends it).
    /// - Throws: `refused` with the answer's head when it is not a 101.
    init(port: Int, origin: String? = nil, path: String = "/") throws {
        socket = try TestClient(port: port)
        var request = "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
        if let origin { request += "Origin: \(origin)\r\n" }
        socket.send(bytes: Array((request + "\r\n").utf8))
        head = try Self.readHead(socket, into: &buffer)
        guard head.hasPrefix("HTTP/1.1 101") else { throw WebSocketError.refused(head) }
    }

    /// Reads an HTTP answer's head; what follows it stays in `buffer`.
    static func readHead(_ socket: TestClient, into buffer: inout [UInt8]) throws -> String {
        let end: [UInt8] = [13, 10, 13, 10]
        while true {
            if let at = buffer.indices.first(where: { buffer[$0...].starts(with: end) }) {
                let text = String(decoding: buffer[..<at], as: UTF8.self)
                buffer.removeSubrange(..<(at + 4))
                return text
            }
            buffer += try socket.rawBytes()
        }
    }

    /// A masked client frame (`masked: false` and `rsv` bits for bad ones on purpose).
    static func frame(_ opcode: UInt8, _ payload: [UInt8], final: Bool = true, masked: Bool = true,
                      mask: [UInt8] = [0x37, 0xFA, 0x21, 0x3D], rsv: UInt8 = 0) -> [UInt8] {
        var out: [UInt8] = [(final ? 0x80 : 0) | rsv | opcode]
        let bit: UInt8 = masked ? 0x80 : 0
        if payload.count < 126 {
            out.append(bit | UInt8(payload.count))
        } else if payload.count < 65_536 {
            out += [bit | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
        } else {
            out.append(bit | 127)
            for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8((payload.count >> shift) & 0xFF)) }
        }
        if masked { out += mask }
        for (index, byte) in payload.enumerated() { out.append(masked ? byte ^ mask[index & 3] : byte) }
        return out
    }

    /// Sends raw bytes.
    func send(bytes: [UInt8]) { socket.send(bytes: bytes) }

    /// Sends one text message (a line, `\n` added unless `terminated` is false).
    func send(_ line: String, terminated: Bool = true) {
        send(bytes: Self.frame(0x1, Array((line + (terminated ? "\n" : "")).utf8)))
    }

    /// The next frame from the daemon.
    func frame(timeout: Double = 5) throws -> Frame {
        while true {
            if buffer.count >= 2 {
                let opcode = buffer[0] & 0x0F
                var length = Int(buffer[1] & 0x7F)
                var at = 2
                if length == 126, buffer.count >= 4 {
                    length = Int(buffer[2]) << 8 | Int(buffer[3])
                    at = 4
                } else if length == 127, buffer.count >= 10 {
                    length = buffer[2..<10].reduce(0) { $0 << 8 | Int($1) }
                    at = 10
                }
                if buffer[1] & 0x80 != 0 { throw WebSocketError.badFrame }
                if length < 126 || at > 2, buffer.count >= at + length {
                    let frame = Frame(opcode: opcode, payload: Array(buffer[at..<(at + length)]))
                    buffer.removeSubrange(..<(at + length))
                    return frame
                }
            }
            buffer += try socket.rawBytes(timeout: timeout)
        }
    }

    /// The lines of the next text message.
    func lines(timeout: Double = 5) throws -> [String] {
        let next = try frame(timeout: timeout)
        guard next.opcode == 1 else { throw WebSocketError.notText(next.opcode) }
        return String(decoding: next.payload, as: UTF8.self).split(separator: "\n").map(String.init)
    }

    private var pendingLines: [String] = []

    /// The next line (messages may hold several), parsed.
    func json(timeout: Double = 5) throws -> [String: Any] {
        if pendingLines.isEmpty { pendingLines = try lines(timeout: timeout) }
        let line = pendingLines.removeFirst()
        guard let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
            throw WebSocketError.notJSON(line)
        }
        return object
    }

    /// Sends a request and returns the next line.
    func request(_ line: String) throws -> [String: Any] {
        send(line)
        return try json()
    }
}
