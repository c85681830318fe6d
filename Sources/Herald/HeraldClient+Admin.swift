/// One connection as `clients` lists it (docs/protocol.md, "Admin").
public struct ConnectedClient: Decodable, Sendable, Equatable {
    /// Its client id (`c7`; global in cluster mode).
    public let client: String
    /// The user its token proved, nil without auth.
    public let user: String?
    /// The display name it gave at `hello` (untrusted), if any.
    public let name: String?
    /// Its peer address (`127.0.0.1`, `unix`).
    public let addr: String
    /// `tcp`, `tls`, `unix`, `ws` or `wss`.
    public let transport: String
    /// How many subscriptions it holds.
    public let subs: Int
    /// Output queued for it, in bytes.
    public let pendingBytes: Int
    /// Events its subscriptions lost to the `drop` policy.
    public let dropped: Int
    /// How long it has been connected, in ms.
    public let connectedMs: Int

    private enum CodingKeys: String, CodingKey {
        case client, user, name, addr, transport, subs, dropped
        case pendingBytes = "pending_bytes"
        case connectedMs = "connected_ms"
    }
}

/// One page of `clients`.
public struct ConnectedClientsPage: Sendable, Equatable {
    /// The connections, in client-id order.
    public let clients: [ConnectedClient]
    /// Pass as `after` for the next page; nil on the last.
    public let next: String?
}

/// Admin ops (`clients`, `kick`, `handlers`): for a user with `admin: true` (any connection without auth).
extension HeraldClient {
    /// One page of the daemon's connections (every node's in cluster mode).
    /// - Parameters:
    ///   - after: a `next` from the page before; nil for the first.
    ///   - limit: at most this many (1 … 1000).
    /// - Returns: the page.
    /// - Throws: `.server("forbidden", …)` for a user that is not an admin, `.notConnected`,
    ///   `.timeout`, `.decoding`.
    public func connectedClients(after: String? = nil, limit: Int = 100) async throws(HeraldClientError) -> ConnectedClientsPage {
        let frame = try await ask("clients") { writer in
            writer.int("limit", limit)
            writer.string("after", after)
        }
        let clients = try (frame.raw("clients") ?? RawJSON("[]")).decode(as: [ConnectedClient].self)
        return ConnectedClientsPage(clients: clients, next: frame.string("next"))
    }

    /// Closes another connection (it is told `kicked`).
    /// - Parameter client: its client id.
    /// - Returns: whether it was open and is now closed.
    /// - Throws: `.server("forbidden", …)` for a user that is not an admin, `.notConnected`, `.timeout`.
    public func kick(_ client: String) async throws(HeraldClientError) -> Bool {
        try await ask("kick") { writer in writer.string("client", client) }.int("count") == 1
    }

    /// The signal handlers a signal on `channel` is offered to at its own level, in the
    /// order it asks them (a `link`'s further levels are not followed; every node's in
    /// cluster mode).
    /// - Parameter channel: a concrete channel name.
    /// - Returns: the handlers' client ids.
    /// - Throws: `.server("forbidden", …)` for a user that is not an admin,
    ///   `.server("bad_channel", …)` for a pattern, `.notConnected`, `.timeout`, `.decoding`.
    public func handlers(of channel: String) async throws(HeraldClientError) -> [String] {
        let frame = try await ask("handlers") { writer in writer.string("ch", channel) }
        return try (frame.raw("handlers") ?? RawJSON("[]")).decode(as: [String].self)
    }
}
