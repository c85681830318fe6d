import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A raw HTTP client for the monitor: sends exactly the bytes a test gives, reads until the
/// daemon closes. No HTTP library, so malformed and slow requests can be sent on purpose.
final class HTTPTestClient {
    private let client: TestClient

    /// A parsed answer.
    struct Answer {
        let status: Int
        let headers: [String: String]
        let body: String
    }

    init(port: Int) throws { client = try TestClient(port: port) }

    /// Closes the socket (the daemon sees EOF).
    func close() { client.closeNow() }

    /// Sends raw bytes (part of a request, or all of it).
    func send(_ text: String) { client.send(bytes: Array(text.utf8)) }

    /// Sends a well-formed request and reads the answer.
    static func request(_ method: String, _ path: String, port: Int) throws -> Answer {
        let client = try HTTPTestClient(port: port)
        client.send(method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: herald-tests\r\n\r\n")
        return try client.answer()
    }

    /// Sends a well-formed request with HTTP Basic credentials (`monitor_auth`) and reads the answer.
    /// - Parameters: user, token: the Basic user name and password; nil sends no `Authorization`.
    static func request(_ method: String, _ path: String, port: Int, user: String?, token: String) throws -> Answer {
        let client = try HTTPTestClient(port: port)
        let authorization = user.map { "Authorization: Basic " + Data(($0 + ":" + token).utf8).base64EncodedString() + "\r\n" } ?? ""
        client.send(method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" + authorization + "\r\n")
        return try client.answer()
    }

    /// Reads until the daemon closes, then parses status line, headers and body.
    func answer(timeout: Double = 10) throws -> Answer {
        let bytes = try readToEnd(timeout: timeout)
        let text = String(decoding: bytes, as: UTF8.self)
        guard let split = text.range(of: "\r\n\r\n") else { throw TestClient.ClientError.notJSON(text) }
        let head = text[..<split.lowerBound].components(separatedBy: "\r\n")
        let statusParts = head.first?.split(separator: " ") ?? []
        guard statusParts.count >= 2, statusParts[0] == "HTTP/1.1", let status = Int(statusParts[1]) else {
            throw TestClient.ClientError.notJSON(text)
        }
        var headers: [String: String] = [:]
        for line in head.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return Answer(status: status, headers: headers, body: String(text[split.upperBound...]))
    }

    /// Every byte until EOF; throws on timeout.
    func readToEnd(timeout: Double) throws -> [UInt8] {
        var bytes: [UInt8] = []
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            let left = deadline.timeIntervalSinceNow
            guard left > 0 else { throw TestClient.ClientError.timeout }
            var poller = pollfd(fd: client.fd, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, Int32(left * 1000) + 1) > 0 else { throw TestClient.ClientError.timeout }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let n = chunk.withUnsafeMutableBytes { read(client.fd, $0.baseAddress, $0.count) }
            if n <= 0 { return bytes }
            bytes.append(contentsOf: chunk[..<n])
        }
    }

    /// Whether nothing at all has arrived (and the connection is still open) right now.
    func hasNothingToRead() -> Bool {
        var poller = pollfd(fd: client.fd, events: Int16(POLLIN), revents: 0)
        return poll(&poller, 1, 0) == 0
    }
}
