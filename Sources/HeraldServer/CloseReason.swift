/// Why a client connection ended, for its last log line (`disconnected … reason=…`).
///
/// The broker says why it closes a connection in the error frame it queues last
/// (`{"error":"slow_consumer",…}`, `forbidden`, `auth_required`, `too_many_errors`, `timeout`,
/// `limit`, `shutting_down`): those codes are the stable wire contract, so the server reads
/// the code back from the queue instead of the broker growing a second way to say it.
/// Everything else is the edge's own knowledge: the peer hung up, a socket call failed, TLS.
enum CloseReason: Equatable, Sendable {
    /// End of stream from the peer (or its TLS close_notify).
    case peerClosed
    /// A read or write failed: libuv's error name (`ECONNRESET`).
    case socketError(String)
    /// The TLS handshake failed, was abandoned, or a record could not be read or sealed.
    case tlsFailed
    /// The TLS handshake did not finish within `tls_timeout_ms`.
    case tlsTimeout
    /// The broker closed it with this error code.
    case broker(String)
    /// The broker asked for a close without an error frame.
    case server
    /// A WebSocket client broke the protocol: the RFC 6455 close code sent (issue 34).
    case webSocket(UInt16)

    /// The `reason=` value.
    var logValue: String {
        switch self {
        case .peerClosed: return "peer_closed"
        case .socketError(let name): return "socket_error:" + name
        case .tlsFailed: return "tls_failed"
        case .tlsTimeout: return "tls_timeout"
        case .broker(let code): return code
        case .server: return "server"
        case .webSocket(let code): return "websocket:" + String(code)
        }
    }

    /// The log line's message: auth failures and slow consumers get their own words, so a
    /// grep (or fail2ban) for them needs no knowledge of the codes.
    var message: String {
        switch self {
        case .broker("forbidden"), .broker("auth_required"): return "auth failed"
        case .broker("slow_consumer"): return "slow consumer disconnected"
        default: return "disconnected"
        }
    }

    /// How loud the line is: routine ends at `debug`; closes a peer brought on itself at
    /// `info`; a slow consumer, which means lost events, at `warn`.
    var level: LogLevel {
        switch self {
        case .peerClosed, .server, .broker("shutting_down"): return .debug
        case .broker("slow_consumer"): return .warn
        case .socketError, .tlsFailed, .tlsTimeout, .broker, .webSocket: return .info
        }
    }

    /// The reason a closing session's queue gives: the code of its last frame when that is
    /// an error frame (`{"error":"CODE"`, which the protocol puts first), else `.server`.
    /// - Parameter outbound: the session's queued bytes, the closing frame last.
    /// - Returns: `.broker(code)` or `.server`.
    static func closing(_ outbound: [UInt8]) -> CloseReason {
        let prefix = Array(#"{"error":""#.utf8)
        guard outbound.last == UInt8(ascii: "\n") else { return .server }
        let body = outbound.dropLast()
        let start = (body.lastIndex(of: UInt8(ascii: "\n")).map { $0 + 1 }) ?? body.startIndex
        let line = body[start...]
        guard line.starts(with: prefix) else { return .server }
        let codeStart = line.startIndex + prefix.count
        guard let codeEnd = line[codeStart...].firstIndex(of: UInt8(ascii: "\"")), codeEnd > codeStart else { return .server }
        return .broker(String(decoding: line[codeStart..<codeEnd], as: UTF8.self))
    }
}
