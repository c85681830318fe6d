/// An incremental parser for the head of one HTTP/1.x request, fed the bytes as they arrive.
///
/// Pure (no sockets, no clocks) so every byte split can be tested. Why it is strict: the
/// monitor answers three GETs, so anything unusual is more likely a scanner or a mistake
/// than a client worth accommodating, and a 4xx costs nothing. What it accepts: a request
/// line `METHOD SP target SP HTTP/1.x`, header fields `name: value`, lines ended by CRLF or
/// a bare LF (RFC 9112 §2.2 lets a server accept LF), empty lines before the request line
/// skipped. The head, including its final empty line, must fit in `maxHeadBytes`; bytes
/// after it (a body, a pipelined request) are ignored because every answer closes the
/// connection.
struct HTTPRequestParser {
    /// Where parsing stands.
    enum Outcome: Sendable, Equatable {
        /// The head is not complete yet; feed more bytes.
        case incomplete
        /// A well-formed head.
        case complete(HTTPRequest)
        /// A bad head; answer with this status and close.
        case rejected(HTTPStatus)
    }

    /// The largest head accepted, in bytes; past it the answer is 414 (request line) or 431.
    let maxHeadBytes: Int
    /// The head bytes so far (never more than `maxHeadBytes`).
    private var head: [UInt8] = []
    /// Where the line being scanned starts in `head`.
    private var lineStart = 0
    /// Where the first LF of the request line is, once seen.
    private var requestLineEnd: Int?
    private(set) var outcome: Outcome = .incomplete
    /// Where, in the bytes of the `feed` that completed the head, the bytes after it start
    /// (a WebSocket client's first frames may come in the same read).
    private(set) var restStart = 0

    /// Creates a parser.
    /// - Parameter maxHeadBytes: the cap on the request line plus headers (8 KiB is usual).
    init(maxHeadBytes: Int = 8192) {
        self.maxHeadBytes = max(16, maxHeadBytes)
        head.reserveCapacity(512)
    }

    /// Whether any byte of a request (not only blank lines) has arrived.
    var hasStarted: Bool { !head.isEmpty }

    /// Feeds bytes; once the outcome is decided, more bytes change nothing.
    /// - Parameter bytes: the next bytes from the socket.
    /// - Returns: the outcome so far.
    @discardableResult
    mutating func feed(_ bytes: UnsafeRawBufferPointer) -> Outcome {
        guard case .incomplete = outcome else { return outcome }
        for (offset, byte) in bytes.enumerated() {
            if head.isEmpty && (byte == 13 || byte == 10) { continue }  // blank lines before the request
            guard head.count < maxHeadBytes else {
                outcome = .rejected(requestLineEnd == nil ? .uriTooLong : .headersTooLarge)
                return outcome
            }
            head.append(byte)
            guard byte == 10 else { continue }
            let position = head.count - 1
            if requestLineEnd == nil {
                requestLineEnd = position
            } else if isBlankLine(from: lineStart, to: position) {
                outcome = parse()
                restStart = offset + 1
                return outcome
            }
            lineStart = position + 1
        }
        return outcome
    }

    /// Convenience for tests and callers holding an array.
    @discardableResult
    mutating func feed(_ bytes: [UInt8]) -> Outcome {
        bytes.withUnsafeBytes { feed($0) }
    }

    /// Whether the line from `start` to the LF at `end` is empty (`\n` or `\r\n`).
    private func isBlankLine(from start: Int, to end: Int) -> Bool {
        end == start || (end == start + 1 && head[start] == 13)
    }

    /// Splits the complete head into lines and checks each.
    private func parse() -> Outcome {
        var lines: [ArraySlice<UInt8>] = []
        var start = 0
        for index in head.indices where head[index] == 10 {
            var end = index
            if end > start && head[end - 1] == 13 { end -= 1 }
            lines.append(head[start..<end])
            start = index + 1
        }
        guard let requestLine = lines.first else { return .rejected(.badRequest) }
        // The last line is the empty one that ended the head.
        let fieldLines = lines.dropFirst().dropLast()
        let line: RequestLine
        switch Self.parseRequestLine(requestLine) {
        case .success(let parsed): line = parsed
        case .failure(let failure): return .rejected(failure.status)
        }
        var fields: [HTTPRequest.Field] = []
        for fieldLine in fieldLines {
            guard let field = Self.parseField(fieldLine) else { return .rejected(.badRequest) }
            fields.append(field)
        }
        let request = HTTPRequest(method: line.method, target: line.target, path: line.path,
                                  minorVersion: line.minorVersion, fields: fields)
        // RFC 9112 §3.2: an HTTP/1.1 request without exactly one Host is answered 400.
        let hosts = fields.filter { $0.name.lowercased() == "host" }.count
        if line.minorVersion == 1 && hosts != 1 { return .rejected(.badRequest) }
        if hosts > 1 { return .rejected(.badRequest) }
        return .complete(request)
    }

    private struct RequestLine {
        let method: String
        let target: String
        let path: String
        let minorVersion: Int
    }

    /// Why a request line was refused.
    private struct LineFailure: Error {
        let status: HTTPStatus
    }

    private static func parseRequestLine(_ line: ArraySlice<UInt8>) -> Result<RequestLine, LineFailure> {
        let parts = line.split(separator: 32, omittingEmptySubsequences: false)
        guard parts.count == 3 else { return .failure(LineFailure(status: .badRequest)) }
        let method = parts[0], target = parts[1], version = parts[2]
        guard !method.isEmpty, method.allSatisfy(isTokenByte) else { return .failure(LineFailure(status: .badRequest)) }
        guard !target.isEmpty, target.allSatisfy({ $0 > 32 && $0 < 127 }) else {
            return .failure(LineFailure(status: .badRequest))
        }
        guard let minor = minorVersion(of: version) else {
            return .failure(LineFailure(status: isAnyHTTPVersion(version) ? .versionNotSupported : .badRequest))
        }
        guard let path = path(of: target) else { return .failure(LineFailure(status: .badRequest)) }
        return .success(RequestLine(method: String(decoding: method, as: UTF8.self),
                                    target: String(decoding: target, as: UTF8.self),
                                    path: path, minorVersion: minor))
    }

    /// 0 or 1 for `HTTP/1.0` and `HTTP/1.1`, nil otherwise.
    private static func minorVersion(of version: ArraySlice<UInt8>) -> Int? {
        guard isAnyHTTPVersion(version), version[version.startIndex + 5] == UInt8(ascii: "1") else { return nil }
        switch version[version.startIndex + 7] {
        case UInt8(ascii: "0"): return 0
        case UInt8(ascii: "1"): return 1
        default: return nil
        }
    }

    /// Whether the text is `HTTP/d.d` for any digits (so 505 rather than 400 fits).
    private static func isAnyHTTPVersion(_ version: ArraySlice<UInt8>) -> Bool {
        let bytes = Array(version)
        guard bytes.count == 8, bytes[0..<5].elementsEqual("HTTP/".utf8) else { return false }
        return isDigit(bytes[5]) && bytes[6] == UInt8(ascii: ".") && isDigit(bytes[7])
    }

    /// The path of an origin-form (`/x?q`) or absolute-form (`http://host/x`) target; `*`
    /// (asterisk-form) is kept as is. Anything else is malformed.
    private static func path(of target: ArraySlice<UInt8>) -> String? {
        var bytes = Array(target)
        if bytes == [UInt8(ascii: "*")] { return "*" }
        if bytes.first != UInt8(ascii: "/") {
            let lowered = bytes.map { $0 >= 65 && $0 <= 90 ? $0 + 32 : $0 }
            let scheme: [UInt8]
            if lowered.starts(with: Array("http://".utf8)) {
                scheme = Array("http://".utf8)
            } else if lowered.starts(with: Array("https://".utf8)) {
                scheme = Array("https://".utf8)
            } else {
                return nil
            }
            let rest = bytes.dropFirst(scheme.count)
            guard let slash = rest.firstIndex(of: UInt8(ascii: "/")) else { return "/" }
            bytes = Array(rest[slash...])
        }
        if let query = bytes.firstIndex(where: { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }) {
            bytes = Array(bytes[..<query])
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// `name: value` with optional blanks around the value; nil when malformed, including
    /// obsolete line folding (a line starting with a blank) and blanks before the colon,
    /// which RFC 9112 §5.1 says to refuse.
    private static func parseField(_ line: ArraySlice<UInt8>) -> HTTPRequest.Field? {
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { return nil }
        let name = line[line.startIndex..<colon]
        guard !name.isEmpty, name.allSatisfy(isTokenByte) else { return nil }
        var value = line[(colon + 1)...]
        while let first = value.first, first == 32 || first == 9 { value = value.dropFirst() }
        while let last = value.last, last == 32 || last == 9 { value = value.dropLast() }
        // Field values: visible bytes, blanks and obs-text; no other control characters.
        guard value.allSatisfy({ $0 == 9 || ($0 >= 32 && $0 != 127) }) else { return nil }
        return HTTPRequest.Field(name: String(decoding: name, as: UTF8.self),
                                 value: String(decoding: value, as: UTF8.self))
    }

    private static func isDigit(_ byte: UInt8) -> Bool { byte >= 48 && byte <= 57 }

    /// RFC 9110 `tchar`: the bytes allowed in methods and field names.
    private static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), 48...57: return true
        default: return Array("!#$%&'*+-.^_`|~".utf8).contains(byte)
        }
    }
}
