/// The HTTP status codes the monitor and the WebSocket listener answer with.
enum HTTPStatus: Int, Sendable, Equatable {
    case ok = 200
    case badRequest = 400
    case unauthorized = 401
    case forbidden = 403
    case notFound = 404
    case methodNotAllowed = 405
    case requestTimeout = 408
    case uriTooLong = 414
    case upgradeRequired = 426
    case tooManyRequests = 429
    case headersTooLarge = 431
    case serviceUnavailable = 503
    case versionNotSupported = 505

    /// The reason phrase of the status line (RFC 9110 wording).
    var reason: String {
        switch self {
        case .ok: return "OK"
        case .badRequest: return "Bad Request"
        case .unauthorized: return "Unauthorized"
        case .forbidden: return "Forbidden"
        case .notFound: return "Not Found"
        case .methodNotAllowed: return "Method Not Allowed"
        case .requestTimeout: return "Request Timeout"
        case .uriTooLong: return "URI Too Long"
        case .upgradeRequired: return "Upgrade Required"
        case .tooManyRequests: return "Too Many Requests"
        case .headersTooLarge: return "Request Header Fields Too Large"
        case .serviceUnavailable: return "Service Unavailable"
        case .versionNotSupported: return "HTTP Version Not Supported"
        }
    }
}
