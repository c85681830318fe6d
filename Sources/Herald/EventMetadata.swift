/// What arrived with an event besides its data: where, from whom, in which order.
public struct EventMetadata: Sendable {
    /// The concrete channel the event was published on (also for pattern subscriptions).
    public let channel: Channel
    /// The subscription's name on this connection.
    public let subscription: String
    /// The publishing connection's id (`c3`), when the daemon says.
    public let sender: String?
    /// The channel's sequence number; nil for `current` snapshots.
    public let seq: Int?
    /// The subscription's own `args`, echoed with every event.
    public let args: RawJSON?
    /// True on the final delivery of a `once`/`max` subscription.
    public let isLast: Bool
    /// Events this subscription lost right before this one: to the daemon's slow-consumer
    /// policy (`dropped:N`) or, for an ``EventStream``, to the stream's buffering policy.
    public let dropped: Int
    /// True when replayed from history (`since`).
    public let isReplay: Bool
    /// `set`, `del`, `touch`, `current`, `index`, `splice`; nil for a plain `pub`.
    public let kind: String?
    /// The channel's state revision, for state events.
    public let rev: Int?
    /// A request's reply token, when the event is a request.
    public let replyToken: String?
    /// List events (`index`, `splice`): the position changed.
    public internal(set) var index: Int? = nil
    /// A `splice` event: how many elements were removed at `index`.
    public internal(set) var remove: Int? = nil
    /// A `splice` event: the elements inserted at `index` (a JSON array).
    public internal(set) var insert: RawJSON? = nil

    /// Decodes `args` into `type`.
    /// - Parameter type: the type the subscription's `args` were encoded from.
    /// - Returns: the decoded args, or nil when the subscription had none.
    /// - Throws: `HeraldClientError.decoding` when they do not decode.
    public func args<Args: Decodable>(as type: Args.Type) throws(HeraldClientError) -> Args? {
        guard let args else { return nil }
        return try args.decode(as: Args.self)
    }

    /// The same metadata with `extra` more drops, for local buffer losses.
    func addingDrops(_ extra: Int) -> EventMetadata {
        EventMetadata(channel: channel, subscription: subscription, sender: sender, seq: seq, args: args,
                      isLast: isLast, dropped: dropped + extra, isReplay: isReplay, kind: kind, rev: rev,
                      replyToken: replyToken, index: index, remove: remove, insert: insert)
    }
}

/// One event as received: its metadata and its raw `data`.
///
/// A class: it is handed from the I/O thread to a queue and on to the handler, and copying
/// the struct (a dozen reference-counted fields) at each step cost more than the one object.
final class IncomingEvent: Sendable {
    let metadata: EventMetadata
    /// The `data` bytes; nil when the publisher sent none.
    let data: RawJSON?

    /// Builds an event from an `event` frame; nil when it lacks `event` or `sub`.
    init?(frame: ServerFrame) {
        let fields = EventFields(frame)
        guard let channel = fields.event.flatMap(frame.string(at:)), let sub = fields.sub.flatMap(frame.string(at:)) else { return nil }
        var metadata = EventMetadata(
            channel: Channel(verbatim: channel), subscription: sub, sender: fields.from.flatMap(frame.string(at:)),
            seq: fields.seq.flatMap(frame.int(at:)), args: fields.args.map(frame.raw(at:)),
            isLast: fields.last.flatMap(frame.bool(at:)) == true,
            dropped: fields.dropped.flatMap(frame.int(at:)) ?? 0, isReplay: fields.replay.flatMap(frame.bool(at:)) == true,
            kind: fields.kind.flatMap(frame.string(at:)), rev: fields.rev.flatMap(frame.int(at:)),
            replyToken: fields.reply.flatMap(frame.string(at:)))
        if metadata.kind == "index" || metadata.kind == "splice" {
            metadata.index = fields.index.flatMap(frame.int(at:))
            metadata.remove = fields.remove.flatMap(frame.int(at:))
            metadata.insert = fields.insert.map(frame.raw(at:))
        }
        self.metadata = metadata
        // State events carry their payload as `value` (docs/protocol.md "Retained values").
        data = (fields.data ?? fields.value).map(frame.raw(at:))
    }

    /// Decodes `data` into `Event`; an absent `data` decodes as `{}` (an event with no fields).
    func decode<Event: Decodable>(_ type: Event.Type) throws(HeraldClientError) -> Event {
        do {
            return try (data ?? RawJSON("{}")).decode(as: Event.self)
        } catch {
            if case .decoding(let type, _, let message) = error {
                throw .decoding(type: type, channel: metadata.channel.name, message: message)
            }
            throw error
        }
    }
}

/// One delivery of a typed event: the event and its metadata.
public struct Delivery<Event: Sendable>: Sendable {
    /// The decoded event.
    public let event: Event
    /// Channel, sender, seq, args, ….
    public let metadata: EventMetadata
}
