import Synchronization

/// Counts events an ``EventStream`` lost to its buffering policy.
final class DropCounter: Sendable {
    private let total = Atomic<Int>(0)
    private let unreported = Atomic<Int>(0)

    /// Counts one dropped delivery; the drops it was carrying are carried on to the next one.
    func record(droppedCarrying carried: Int) {
        total.add(1, ordering: .relaxed)
        unreported.add(1 + carried, ordering: .relaxed)
    }

    /// Drops since the last call, to attach to the next delivered event.
    func takeUnreported() -> Int { unreported.exchange(0, ordering: .relaxed) }

    var count: Int { total.load(ordering: .relaxed) }
}

/// Typed events as an `AsyncSequence`, for one consumer, with a stated buffering policy.
///
/// The subscription lives as long as the stream or an iterator over it: when both are gone,
/// or the consuming task is cancelled, it is unsubscribed. Events lost to the buffer are
/// counted in `droppedCount` and reported on the next delivered event (`metadata.dropped`).
/// The stream finishes when the subscription ends (`max` reached, channel removed) or the
/// client closes.
public struct EventStream<Event: HeraldEvent>: AsyncSequence, Sendable {
    /// One delivery: the event and its metadata.
    public typealias Element = Delivery<Event>

    /// What the I/O thread queues: the event still undecoded (the consumer decodes it, so
    /// decoding runs beside the I/O thread, as handlers do) and the drops it carries.
    struct Pending: Sendable {
        let incoming: IncomingEvent
        let dropped: Int
    }

    let base: AsyncStream<Pending>
    let drops: DropCounter
    /// Where an event that does not decode is reported (the subscription's
    /// `onDecodingFailure`, else the client's error handler).
    let onFailure: @Sendable (HeraldClientError, EventMetadata) -> Void
    /// The subscription; cancelling it finishes the stream.
    public let subscription: Subscription

    /// Events dropped so far because the consumer fell behind the buffer.
    public var droppedCount: Int { drops.count }

    /// Makes the iterator (it keeps the subscription alive while iterating).
    public func makeAsyncIterator() -> Iterator {
        Iterator(base: base.makeAsyncIterator(), onFailure: onFailure, subscription: subscription)
    }

    /// Iterates deliveries.
    public struct Iterator: AsyncIteratorProtocol {
        var base: AsyncStream<Pending>.Iterator
        let onFailure: @Sendable (HeraldClientError, EventMetadata) -> Void
        let subscription: Subscription

        /// The next delivery, or nil when the stream finished.
        public mutating func next() async -> Delivery<Event>? {
            while let pending = await base.next() {
                if let delivery = Self.decoded(pending, onFailure) { return delivery }
            }
            return nil
        }

        /// The next delivery (isolation-preserving form).
        public mutating func next(isolation actor: isolated (any Actor)?) async -> Delivery<Event>? {
            while let pending = await base.next(isolation: actor) {
                if let delivery = Self.decoded(pending, onFailure) { return delivery }
            }
            return nil
        }

        /// Decodes one queued event; a failure is reported and the event skipped.
        private static func decoded(_ pending: Pending, _ onFailure: @Sendable (HeraldClientError, EventMetadata) -> Void) -> Delivery<Event>? {
            do throws(HeraldClientError) {
                let event = try pending.incoming.decode(Event.self)
                return Delivery(event: event, metadata: pending.incoming.metadata.addingDrops(pending.dropped))
            } catch {
                onFailure(error, pending.incoming.metadata)
                return nil
            }
        }
    }
}

extension HeraldClient {
    /// Subscribes to a typed topic as an `AsyncSequence`.
    ///
    ///     for await delivery in try client.events(Car.moved(id: 42), buffering: .newest(100)) {
    ///         print(delivery.event.x, delivery.metadata.seq ?? 0)
    ///     }
    /// - Parameters:
    ///   - topic: the channel or pattern.
    ///   - options: name, group, max, args, `onDecodingFailure` (called in the consuming
    ///     task for an event that does not decode, which is skipped; else the error handler
    ///     hears of it). `delivery` does not apply: the consumer decides.
    ///   - buffering: what to keep while the consumer lags (default: newest 1024).
    /// - Returns: the stream.
    /// - Throws: `.badChannel`, `.closed`.
    public func events<Event: HeraldEvent>(
        _ topic: Topic<Event>, options: SubscriptionOptions = SubscriptionOptions(),
        buffering: StreamBuffering = .newest(1024)
    ) throws(HeraldClientError) -> EventStream<Event> {
        let policy: AsyncStream<EventStream<Event>.Pending>.Continuation.BufferingPolicy
        switch buffering {
        case .unbounded: policy = .unbounded
        case .newest(let n): policy = .bufferingNewest(max(1, n))
        case .oldest(let n): policy = .bufferingOldest(max(1, n))
        }
        let (stream, continuation) = AsyncStream.makeStream(of: EventStream<Event>.Pending.self, bufferingPolicy: policy)
        let drops = DropCounter()
        let binding = try bind(topic.channel, options: options, target: .inline, ownerAlive: nil,
                               onEnd: { continuation.finish() }) { incoming in
            let pending = EventStream<Event>.Pending(incoming: incoming, dropped: drops.takeUnreported())
            if case .dropped(let lost) = continuation.yield(pending) {
                drops.record(droppedCarrying: lost.dropped)
            }
        }
        continuation.onTermination = { [weak self] _ in self?.unbind(binding) }
        let subscription = Subscription(binding: binding, channel: topic.channel, client: self, cancelsOnDeinit: true)
        let onFailure: @Sendable (HeraldClientError, EventMetadata) -> Void = options.onDecodingFailure ?? { [weak self] error, _ in
            self?.report(error)
        }
        return EventStream(base: stream, drops: drops, onFailure: onFailure, subscription: subscription)
    }

    /// The stream form for an event type's home channel.
    /// - Parameters:
    ///   - type: the event type.
    ///   - options: name, group, max, args.
    ///   - buffering: what to keep while the consumer lags.
    /// - Returns: the stream.
    /// - Throws: `.badChannel`, `.closed`.
    public func events<Event: HeraldEvent>(
        _ type: Event.Type, options: SubscriptionOptions = SubscriptionOptions(),
        buffering: StreamBuffering = .newest(1024)
    ) throws(HeraldClientError) -> EventStream<Event> {
        try events(Event.topic, options: options, buffering: buffering)
    }
}
