/// How a listener's connections speak: over TLS or not, in WebSocket frames (issue 34) or
/// as bare lines. The line protocol above is the same on all four.
struct Transport: Equatable, Sendable {
    /// Wrapped in TLS (`tls_port`, `wss_port`).
    var isTLS = false
    /// An HTTP upgrade, then WebSocket frames (`ws_port`, `wss_port`).
    var isWebSocket = false

    /// TCP or a Unix socket, lines as they are.
    static let plain = Transport()
    /// The `tls_port` listener.
    static let tls = Transport(isTLS: true)
    /// The `ws_port` listener.
    static let webSocket = Transport(isWebSocket: true)
    /// The `wss_port` listener.
    static let secureWebSocket = Transport(isTLS: true, isWebSocket: true)
}
