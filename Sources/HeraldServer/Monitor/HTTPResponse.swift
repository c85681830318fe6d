import HeraldWire

/// One HTTP/1.1 response of the monitor; every response closes the connection.
///
/// Why no keep-alive: monitoring clients (Prometheus, curl, load-balancer probes) poll every
/// few seconds at most, and closing after each answer keeps one state per connection:
/// read one head, write one answer, go.
struct HTTPResponse: Sendable, Equatable {
    /// The status.
    var status: HTTPStatus
    /// The `Content-Type` value.
    var contentType: String
    /// The body bytes (sent for GET, counted but not sent for HEAD).
    var body: [UInt8]
    /// The `Allow` value for 405 answers.
    var allow: String?
    /// More header lines (`Sec-WebSocket-Version: 13` on a 426), without their CRLF.
    var headers: [String] = []

    /// Creates a response.
    init(status: HTTPStatus, contentType: String = "text/plain; charset=utf-8", body: [UInt8], allow: String? = nil) {
        self.status = status
        self.contentType = contentType
        self.body = body
        self.allow = allow
    }

    /// A plain-text answer: the status's reason in lower case, or `text`.
    static func plain(_ status: HTTPStatus, _ text: String? = nil) -> HTTPResponse {
        HTTPResponse(status: status, body: Array(((text ?? status.reason.lowercased()) + "\n").utf8))
    }

    /// 401 with `WWW-Authenticate: Basic realm="heraldd"` (`monitor_auth`): no credentials,
    /// or an unknown user or wrong token.
    static var unauthorized: HTTPResponse {
        var response = HTTPResponse.plain(.unauthorized, "credentials of an admin user needed (HTTP Basic: user name, token)")
        response.headers.append(#"WWW-Authenticate: Basic realm="heraldd", charset="UTF-8""#)
        return response
    }

    /// The bytes on the wire.
    /// - Parameter includeBody: false for HEAD: same headers, no body.
    /// - Returns: status line, headers and (unless HEAD) the body.
    func serialized(includeBody: Bool = true) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(160 + (includeBody ? body.count : 0))
        out.append(contentsOf: "HTTP/1.1 ".utf8)
        out.appendInt(status.rawValue)
        out.append(contentsOf: (" " + status.reason + "\r\n").utf8)
        out.append(contentsOf: ("Content-Type: " + contentType + "\r\n").utf8)
        out.append(contentsOf: "Content-Length: ".utf8)
        out.appendInt(body.count)
        out.append(contentsOf: "\r\nCache-Control: no-store\r\nConnection: close\r\n".utf8)
        if let allow { out.append(contentsOf: ("Allow: " + allow + "\r\n").utf8) }
        for header in headers { out.append(contentsOf: (header + "\r\n").utf8) }
        out.append(contentsOf: "\r\n".utf8)
        if includeBody { out.append(contentsOf: body) }
        return out
    }
}
