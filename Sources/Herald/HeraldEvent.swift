/// An event type with a home channel: the typed way to publish and subscribe.
///
/// Why a static channel: a call site names the type (`client.publish(Moved(x: 1))`,
/// `client.subscribe(Moved.self) { … }`) and the channel follows from it, with no string at
/// the call site and no cast in the handler. The home channel may be a pattern
/// (`car.*.moved`): subscribing to the type then covers every instance, and publishing needs
/// a concrete ``Topic`` such as `Car.moved(id: 42)`.
public protocol HeraldEvent: Codable, Sendable {
    /// Where events of this type live: a concrete name, or a pattern covering its instances.
    static var channel: Channel { get }
}

extension HeraldEvent {
    /// The home channel as a typed topic.
    public static var topic: Topic<Self> { Topic(channel) }
}

/// A request type: published with `request(_:)`, answered with a typed `Reply`.
public protocol HeraldRequest: HeraldEvent {
    /// What a responder answers.
    associatedtype Reply: Codable & Sendable
}

/// A channel that carries events of one type: `Topic<CarMoved>` for `car.42.moved`.
///
/// Instance channels are built from typed parts by a small function on the app's side,
/// `static func moved(id: Int) -> Topic<CarMoved> { Topic("car", id, "moved") }`, so
/// `Car.moved(id: 42)` is both the channel and the event type.
public struct Topic<Event: HeraldEvent>: Hashable, Sendable, CustomStringConvertible {
    /// The channel name or pattern.
    public let channel: Channel

    /// A topic on `channel`.
    /// - Parameter channel: the channel (or pattern) carrying `Event`.
    public init(_ channel: Channel) {
        self.channel = channel
    }

    /// A topic whose channel is joined from segments.
    /// - Parameter segments: strings, integers, `.one`, `.rest`.
    public init(_ segments: any ChannelSegment...) {
        self.channel = Channel(verbatim: segments.map(\.segmentText).joined(separator: "."))
    }

    /// The channel name.
    public var description: String { channel.name }
}
