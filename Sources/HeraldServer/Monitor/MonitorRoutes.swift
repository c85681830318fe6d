/// Maps a parsed request to the monitor's answer. Pure apart from the closures, so the
/// status-code rules are unit-tested without sockets.
enum MonitorRoutes {
    /// The paths served and their content.
    enum Endpoint: String, CaseIterable {
        case healthz = "/healthz"
        case varz = "/varz"
        case metrics = "/metrics"
        /// The console (issue 37): its page, style sheet and script (`ConsoleFiles`).
        case console = "/"
        case consoleStyle = "/console.css"
        case consoleScript = "/console.js"
        /// The JavaScript client the console imports (the bytes `ws_port` serves too).
        case clientScript = "/herald.mjs"
        /// Where the console finds the WebSocket listener: `{"ws_port","wss_port","node","version"}`.
        case consoleInfo = "/console.json"
    }

    /// Whether a path is locked by `monitor_auth`: every one but `/healthz`, so a load
    /// balancer's probe needs no secret, and an unknown path says nothing without credentials.
    static func needsCredentials(_ path: String) -> Bool {
        path != Endpoint.healthz.rawValue
    }

    /// The methods every endpoint allows.
    static let allowedMethods = "GET, HEAD"

    /// The answer to one request.
    /// - Parameters:
    ///   - request: the parsed head.
    ///   - isStopping: whether shutdown has begun (read only for `/healthz`).
    ///   - snapshot: takes the figures (called only for `/varz` and `/metrics`).
    /// - Returns: the response; unknown path 404, other method 405 with `Allow`.
    ///   - consoleInfo: the body of `/console.json` (called only for that path).
    static func respond(to request: HTTPRequest, isStopping: () -> Bool,
                        snapshot: () -> MonitorSnapshot,
                        consoleInfo: () -> [UInt8] = { Array("{}".utf8) }) -> HTTPResponse {
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
        case .console:
            return HTTPResponse(status: .ok, contentType: "text/html; charset=utf-8", body: Array(ConsoleFiles.indexHTML.utf8))
        case .consoleStyle:
            return HTTPResponse(status: .ok, contentType: "text/css; charset=utf-8", body: Array(ConsoleFiles.styleSheet.utf8))
        case .consoleScript:
            return HTTPResponse(status: .ok, contentType: "text/javascript; charset=utf-8", body: Array(ConsoleFiles.script.utf8))
        case .clientScript:
            return HTTPResponse(status: .ok, contentType: "text/javascript; charset=utf-8",
                                body: Array(WebSocketHandshake.clientScriptText.utf8))
        case .consoleInfo:
            return HTTPResponse(status: .ok, contentType: "application/json", body: consoleInfo())
        }
    }
}
