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

    let base: AsyncStream<Delivery<Event>>
    let drops: DropCounter
    /// The subscription; cancelling it finishes the stream.
    public let subscription: Subscription

    /// Events dropped so far because the consumer fell behind the buffer.
    public var droppedCount: Int { drops.count }

    /// Makes the iterator (it keeps the subscription alive while iterating).
    public func makeAsyncIterator() -> Iterator {
        Iterator(base: base.makeAsyncIterator(), subscription: subscription)
    }

    /// Iterates deliveries.
    public struct Iterator: AsyncIteratorProtocol {
        var base: AsyncStream<Delivery<Event>>.Iterator
        let subscription: Subscription

        /// The next delivery, or nil when the stream finished.
        public mutating func next() async -> Delivery<Event>? {
            await base.next()
        }

        /// The next delivery (isolation-preserving form).
        public mutating func next(isolation actor: isolated (any Actor)?) async -> Delivery<Event>? {
            await base.next(isolation: actor)
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
    ///   - options: name, group, max, args, `onDecodingFailure` (called on the I/O thread for
    ///     an event that does not decode; else the error handler hears of it). `delivery`
    ///     does not apply: the consumer decides.
    ///   - buffering: what to keep while the consumer lags (default: newest 1024).
    /// - Returns: the stream.
    /// - Throws: `.badChannel`, `.closed`.
    public func events<Event: HeraldEvent>(
        _ topic: Topic<Event>, options: SubscriptionOptions = SubscriptionOptions(),
        buffering: StreamBuffering = .newest(1024)
    ) throws(HeraldClientError) -> EventStream<Event> {
        let policy: AsyncStream<Delivery<Event>>.Continuation.BufferingPolicy
        switch buffering {
        case .unbounded: policy = .unbounded
        case .newest(let n): policy = .bufferingNewest(max(1, n))
        case .oldest(let n): policy = .bufferingOldest(max(1, n))
        }
        let (stream, continuation) = AsyncStream.makeStream(of: Delivery<Event>.self, bufferingPolicy: policy)
        let drops = DropCounter()
        let binding = try bind(topic.channel, options: options, target: .inline, ownerAlive: nil,
                               onEnd: { continuation.finish() }) { [weak self] incoming in
            do throws(HeraldClientError) {
                let event = try incoming.decode(Event.self)
                let metadata = incoming.metadata.addingDrops(drops.takeUnreported())
                if case .dropped(let lost) = continuation.yield(Delivery(event: event, metadata: metadata)) {
                    drops.record(droppedCarrying: lost.metadata.dropped)
                }
            } catch {
                if let onFailure = options.onDecodingFailure {
                    onFailure(error, incoming.metadata)
                } else {
                    self?.report(error)
                }
            }
        }
        continuation.onTermination = { [weak self] _ in self?.unbind(binding) }
        let subscription = Subscription(binding: binding, channel: topic.channel, client: self, cancelsOnDeinit: true)
        return EventStream(base: stream, drops: drops, subscription: subscription)
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
