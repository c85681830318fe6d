import Dispatch
import HeraldWire

/// Presence (docs/protocol.md, "Presence"): who is in a channel, page by page, and the
/// ``RemotePresence`` mirror kept current by the daemon's `$presence.CH` events.
extension HeraldClient {
    /// Mirrors who is in a channel, with each member's `info` decoded as `Info`; returns once
    /// the mirror holds the member list.
    ///
    ///     let room = try await client.presence(of: Channel("room", 1), info: Profile.self)
    ///     let watching = room.observe { state in render(state.members.compactMap(\.info?.name)) }
    ///
    /// Members are connections subscribed to exactly `channel` (not by a pattern, not as a
    /// signal handler). Under the hood: a subscription to `$presence.CH` (join, leave and count
    /// events), and `presence` pages read after it is confirmed, again after every reconnect.
    /// - Parameters:
    ///   - channel: a concrete application channel (not a pattern, not `$…`).
    ///   - info: the type members' `info` decodes as (an app's profile type).
    ///   - options: page size and the most members listed before keeping only the count.
    /// - Returns: the mirror; releasing it unsubscribes.
    /// - Throws: `.badChannel`, the daemon's `forbidden` (no subscribe right on `channel`) or
    ///   `unavailable` (cluster mode, not built yet), `.notConnected`, `.timeout`, `.closed`.
    public func presence<Info: Decodable & Sendable>(
        of channel: Channel, info: Info.Type, options: PresenceOptions = PresenceOptions()
    ) async throws(HeraldClientError) -> RemotePresence<Info> {
        let name = try channel.validatedConcrete().name
        if name.hasPrefix("$") { throw .badChannel("presence is kept for application channels, not '$' ones") }
        let remote = RemotePresence<Info>(channel: channel, client: self, queue: orderedQueue, options: options)
        let subscriptionOptions = SubscriptionOptions(delivery: .ordered, onEnd: { [weak remote] _ in remote?.finishStreams() },
                                                      onGap: { [weak remote] _ in remote?.resync() })
        let binding = try bind(channel.presenceChannel, options: subscriptionOptions, target: queue(for: .ordered), ownerAlive: nil,
                               onAcknowledged: { [weak remote] in remote?.resync() }) { [weak remote] incoming in
            remote?.receive(incoming.data)
        }
        let token = Subscription(binding: binding, channel: channel.presenceChannel, client: self, cancelsOnDeinit: true)
        remote.attach(token)
        try await token.ready()
        try await remote.synced()
        return remote
    }

    /// Mirrors who is in a channel; members' `info` is read as ``ClientInfo`` (the instance
    /// every Herald client sends), and ``PresenceMember/info(as:)`` decodes it as anything else.
    /// - Parameters:
    ///   - channel: a concrete application channel.
    ///   - options: page size and the most members listed before keeping only the count.
    /// - Returns: the mirror; releasing it unsubscribes.
    /// - Throws: as ``presence(of:info:options:)``.
    public func presence(of channel: Channel, options: PresenceOptions = PresenceOptions()) async throws(HeraldClientError) -> RemotePresence<ClientInfo> {
        try await presence(of: channel, info: ClientInfo.self, options: options)
    }

    /// Reads one page of a channel's members (the `presence` op), for tools and one-off
    /// listings; ``presence(of:info:options:)`` keeps a list current instead.
    /// - Parameters:
    ///   - channel: a concrete application channel.
    ///   - after: a previous page's ``PresencePage/next``; nil for the first page.
    ///   - limit: members per page, 1 … 1000 (default 100).
    ///   - countOnly: only the count, no members.
    /// - Returns: the page.
    /// - Throws: `.badChannel`, the daemon's `forbidden`, `bad_field`, `unavailable`,
    ///   `.notConnected`, `.timeout`, `.closed`.
    public func presencePage(of channel: Channel, after: String? = nil, limit: Int = 100,
                             countOnly: Bool = false) async throws(HeraldClientError) -> PresencePage {
        let name = try channel.validatedConcrete().name
        let frame = try await ask("presence") { writer in
            Self.writePresenceQuery(&writer, channel: name, after: after, limit: limit, countOnly: countOnly)
        }
        return Self.presencePage(frame, as: ClientInfo.self)
    }

    /// The fields of a `presence` request.
    static func writePresenceQuery(_ writer: inout FrameWriter, channel: String, after: String?, limit: Int, countOnly: Bool) {
        writer.string("ch", channel)
        if countOnly {
            writer.bool("count_only", true)
        } else {
            writer.int("limit", limit)
            writer.string("after", after)
        }
    }

    /// Reads a `presence` answer; members that are not objects with a `client` are skipped.
    static func presencePage<Info: Decodable & Sendable>(_ frame: ServerFrame, as type: Info.Type)
        -> (count: Int, members: [PresenceMember<Info>], next: String?) {
        var members: [PresenceMember<Info>] = []
        if let range = frame.range("members") {
            let spans = frame.bytes[range].withUnsafeBytes { raw in
                var cursor = JSONCursor(bytes: raw)
                return cursor.arrayElements() ?? []
            }
            let base = range.lowerBound
            for span in spans {
                if let member = PresenceMember<Info>(Array(frame.bytes[(base + span.lowerBound)..<(base + span.upperBound)])) {
                    members.append(member)
                }
            }
        }
        return (frame.int("count") ?? members.count, members, frame.string("next"))
    }

    /// Reads a `presence` answer as a public page.
    static func presencePage(_ frame: ServerFrame, as type: ClientInfo.Type) -> PresencePage {
        let page: (count: Int, members: [PresenceMember<ClientInfo>], next: String?) = presencePage(frame, as: type)
        return PresencePage(count: page.count, members: page.members, next: page.next)
    }

    /// Sends a request whose answer (or failure) is handed to `answered` on `queue`, behind the
    /// events that arrived before it.
    ///
    /// Why not `ask`: a mirror must know which of its events came before an answer and which
    /// after. The I/O thread queues the events it read before it completes an answer
    /// (`handleLine` flushes them first), so going through the same serial queue as the
    /// subscription keeps that order; an awaiting task would lose it.
    func ask(_ op: String, answerOn queue: DispatchQueue, _ fill: (inout FrameWriter) -> Void,
             then answered: @escaping @Sendable (Result<ServerFrame, HeraldClientError>) -> Void) {
        let seconds = configuration.requestTimeout
        let sent = state.withLock { state -> Result<Bool, HeraldClientError> in
            if state.closed { return .failure(.closed) }
            guard state.linkUp else { return .failure(.notConnected) }
            let rid = state.register(timeout: seconds) { result in queue.async { answered(result) } }
            var writer = FrameWriter(op: op, rid: rid)
            fill(&writer)
            return .success(state.enqueue(writer.finished()))
        }
        switch sent {
        case .failure(let error):
            queue.async { answered(.failure(error)) }
        case .success(let wake):
            if wake { loop.wake() }
        }
    }

    /// `hello`'s `info`: the app's object with `"instance"` first, unless it names its own.
    static func makeHelloInfo(instance: String, appInfo: RawJSON?) -> RawJSON {
        var bytes: [UInt8] = []
        bytes.appendRaw("{\"instance\":")
        bytes.appendJSONString(instance)
        guard let appInfo else {
            bytes.append(UInt8(ascii: "}"))
            return RawJSON(bytes: bytes)
        }
        guard let fields = ServerFrame(appInfo.bytes), let open = appInfo.bytes.firstIndex(of: UInt8(ascii: "{")) else {
            return appInfo   // not an object: sent as it is
        }
        if fields.range("instance") != nil { return appInfo }
        if !fields.fields.isEmpty { bytes.append(UInt8(ascii: ",")) }
        let inner = appInfo.bytes[(open + 1)...].drop { $0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }
        bytes.append(contentsOf: inner)
        return RawJSON(bytes: bytes)
    }
}

extension Channel {
    /// The channel the daemon announces this channel's joins and leaves on: `$presence.NAME`.
    /// Subscribing to it needs subscribe permission on this channel.
    public var presenceChannel: Channel { Channel(verbatim: "$presence." + name) }
}
