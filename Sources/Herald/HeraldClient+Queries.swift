/// The daemon's counters, as `stats` answers them.
public struct ServerStats: Sendable, Equatable {
    /// Every counter in the answer by its wire name (`connections`, `msgs_in`, …), so counters
    /// a newer daemon adds are not lost.
    public let counters: [String: Int]
    /// The counter names in the daemon's order (uptime first), for printing.
    public let names: [String]
    /// The answer as JSON text, for tools that print it.
    public let json: RawJSON

    /// A counter by wire name, 0 when absent.
    public subscript(_ name: String) -> Int { counters[name] ?? 0 }
}

/// One channel in a `channels` answer.
public struct ChannelInfo: Sendable, Equatable, Decodable {
    /// The channel name.
    public let ch: String
    /// Subscriptions that match it.
    public let subs: Int
    /// The owning connection of an instance channel.
    public let owner: String?
    /// Whether it holds a retained value.
    public let hasValue: Bool
    /// Its current `seq`.
    public let seq: Int
    /// The parent a `link` set for signals (see ``HeraldClient/link(_:to:)``), or nil.
    public let link: String?

    enum CodingKeys: String, CodingKey {
        case ch, subs, owner, seq, link
        case hasValue = "has_value"
    }
}

/// One of this connection's subscriptions as the daemon lists it (`subs`).
public struct ServerSubscription: Sendable, Equatable, Decodable {
    /// The subscription's name.
    public let sub: String
    /// Its channel or pattern.
    public let ch: String
    /// Its queue group.
    public let group: String?
    /// Its `max`.
    public let max: Int?
    /// Deliveries left of `max`.
    public let remaining: Int?
}

/// Queries: `ping`, `stats`, `channels`, `subs`.
extension HeraldClient {
    /// Round trip to the daemon.
    /// - Returns: the daemon's wall clock in ms since 1970.
    /// - Throws: `.notConnected`, `.timeout`, `.disconnected`.
    public func ping() async throws(HeraldClientError) -> Int {
        try await ask("ping") { _ in }.int("pong") ?? 0
    }

    /// The daemon's counters.
    /// - Returns: the counters.
    /// - Throws: `.notConnected`, `.timeout`, the daemon's error.
    public func stats() async throws(HeraldClientError) -> ServerStats {
        let frame = try await ask("stats") { _ in }
        var counters: [String: Int] = [:]
        var names: [String] = []
        var json: [UInt8] = [UInt8(ascii: "{")]
        for key in frame.keys where key != "ok" && key != "rid" {
            guard let range = frame.range(key) else { continue }
            if let value = frame.int(key) {
                counters[key] = value
                names.append(key)
            }
            if json.count > 1 { json.append(UInt8(ascii: ",")) }
            json += Array("\"\(key)\":".utf8) + frame.bytes[range]
        }
        json.append(UInt8(ascii: "}"))
        return ServerStats(counters: counters, names: names, json: RawJSON(bytes: json))
    }

    /// Channels the daemon knows, sorted by name.
    /// - Parameter pattern: only channels matching this pattern; nil for all.
    /// - Returns: the channels.
    /// - Throws: `.badChannel`, `.notConnected`, `.timeout`, the daemon's error, `.decoding`.
    public func channels(matching pattern: Channel? = nil) async throws(HeraldClientError) -> [ChannelInfo] {
        if let pattern { _ = try pattern.validatedPattern() }
        let frame = try await ask("channels") { writer in writer.string("ch", pattern?.name) }
        return try (frame.raw("channels") ?? RawJSON("[]")).decode(as: [ChannelInfo].self)
    }

    /// This connection's subscriptions as the daemon sees them, in creation order.
    /// - Returns: the subscriptions.
    /// - Throws: `.notConnected`, `.timeout`, `.decoding`.
    public func serverSubscriptions() async throws(HeraldClientError) -> [ServerSubscription] {
        let frame = try await ask("subs") { _ in }
        return try (frame.raw("subs") ?? RawJSON("[]")).decode(as: [ServerSubscription].self)
    }
}
