/// Maps a parsed request to the monitor's answer. Pure apart from the closures, so the
/// status-code rules are unit-tested without sockets.
enum MonitorRoutes {
    /// The paths served and their content.
    enum Endpoint: String, CaseIterable {
        case healthz = "/healthz"
        case varz = "/varz"
        case metrics = "/metrics"
    }

    /// The methods every endpoint allows.
    static let allowedMethods = "GET, HEAD"

    /// The answer to one request.
    /// - Parameters:
    ///   - request: the parsed head.
    ///   - isStopping: whether shutdown has begun (read only for `/healthz`).
    ///   - snapshot: takes the figures (called only for `/varz` and `/metrics`).
    /// - Returns: the response; unknown path 404, other method 405 with `Allow`.
    static func respond(to request: HTTPRequest, isStopping: () -> Bool,
                        snapshot: () -> MonitorSnapshot) -> HTTPResponse {
        guard let endpoint = Endpoint(rawValue: request.path) else { return .plain(.notFound) }
        guard request.method == "GET" || request.method == "HEAD" else {
            var response = HTTPResponse.plain(.methodNotAllowed)
            response.allow = allowedMethods
            return response
        }
        switch endpoint {
        case .healthz:
            return isStopping() ? .plain(.serviceUnavailable, "shutting down") : .plain(.ok, "ok")
        case .varz:
            return HTTPResponse(status: .ok, contentType: "application/json", body: VarzRenderer.render(snapshot()))
        case .metrics:
            return HTTPResponse(status: .ok, contentType: MetricsRenderer.contentType,
                                body: MetricsRenderer.render(snapshot()))
        }
    }
}
