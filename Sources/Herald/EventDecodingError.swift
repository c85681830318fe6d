/// An event that did not decode into a ``ThrowingEventStream``'s event type: what failed, and
/// where in the stream it happened.
///
///     let scores = try client.throwingEvents(Score.self)
///     do throws(EventDecodingError) {
///         for try await delivery in scores { show(delivery.event) }
///     } catch {
///         log.error("bad score on \(error.channel) at seq \(error.seq ?? -1): \(error.error)")
///     }
public struct EventDecodingError: Error, Sendable, CustomStringConvertible {
    /// The client's error, ``HeraldClientError/decoding(type:channel:message:)``: the expected
    /// type, the channel and what did not fit.
    public let error: HeraldClientError
    /// The failed event's metadata: channel, `seq`, subscription, sender, args.
    public let metadata: EventMetadata
    /// The event's `data` as it arrived (nil when the publisher sent none).
    public let data: RawJSON?

    /// The concrete channel the event was published on.
    public var channel: Channel { metadata.channel }
    /// The event's sequence number on its channel (nil for a `current` snapshot).
    public var seq: Int? { metadata.seq }

    /// The decoding error with the event's place: `cannot decode Score from game.score: … (seq 4)`.
    public var description: String {
        "\(error)" + (metadata.seq.map { " (seq \($0))" } ?? "")
    }
}
