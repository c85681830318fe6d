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
    convenience init?(frame: ServerFrame) {
        let fields = EventFields(frame)
        var strings = RecentStrings()
        guard let event = frame.bytes.withUnsafeBytes({ IncomingEvent(line: $0, fields: fields, strings: &strings) }) else { return nil }
        self.init(metadata: event.metadata, data: event.data)
    }

    /// Builds an event from the line an `event` frame was read from, copying only what the
    /// event keeps (its `data`, `args` and strings); nil when it lacks `event` or `sub`.
    /// `strings` holds the previous event's channel, subscription and sender, reused when equal.
    init?(line: UnsafeRawBufferPointer, fields: EventFields, strings: inout RecentStrings) {
        func slice(_ range: Range<Int>) -> UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: line[range]) }
        func string(_ range: Range<Int>?) -> String? { range.flatMap { JSONCursor.decodeString(slice($0)) } }
        func recent(_ range: Range<Int>?, _ cache: inout RecentString) -> String? { range.flatMap { cache.string(for: slice($0)) } }
        func int(_ range: Range<Int>?) -> Int? { range.flatMap { JSONCursor.decodeInt(slice($0)) } }
        func bool(_ range: Range<Int>?) -> Bool? { range.flatMap { JSONCursor.decodeBool(slice($0)) } }
        func raw(_ range: Range<Int>?) -> RawJSON? { range.map { RawJSON(bytes: Array(slice($0))) } }
        guard let channel = recent(fields.event, &strings.channel), let sub = recent(fields.sub, &strings.subscription) else { return nil }
        // Built in place: a local copy assigned afterwards cost a copy and a destroy of the
        // whole struct per event.
        let kind = string(fields.kind)
        let isList = kind == "index" || kind == "splice"
        metadata = EventMetadata(
            channel: Channel(verbatim: channel), subscription: sub, sender: recent(fields.from, &strings.sender),
            seq: int(fields.seq), args: raw(fields.args), isLast: bool(fields.last) == true,
            dropped: int(fields.dropped) ?? 0, isReplay: bool(fields.replay) == true,
            kind: kind, rev: int(fields.rev), replyToken: string(fields.reply),
            index: isList ? int(fields.index) : nil, remove: isList ? int(fields.remove) : nil,
            insert: isList ? raw(fields.insert) : nil)
        // State events carry their payload as `value` (docs/protocol.md "Retained values").
        data = raw(fields.data ?? fields.value)
    }

    private init(metadata: EventMetadata, data: RawJSON?) {
        self.metadata = metadata
        self.data = data
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
