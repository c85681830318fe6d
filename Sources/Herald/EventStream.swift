/// Typed events as an `AsyncSequence`, for one consumer, with a stated buffering policy.
///
/// The subscription lives as long as the stream or an iterator over it: when both are gone,
/// or the consuming task is cancelled, it is unsubscribed. Events lost to the buffer are
/// counted in `droppedCount` and reported on the next delivered event (`metadata.dropped`).
/// The stream finishes when the subscription ends (`max` reached, channel removed) or the
/// client closes. An event that does not decode is skipped (and reported to
/// `SubscriptionOptions.onDecodingFailure`, else to the client's error handler); to have it
/// end the sequence with an error instead, use ``ThrowingEventStream``
/// (`HeraldClient.throwingEvents`).
///
/// Events reach the consumer in batches (everything one read from the daemon brought): the
/// iterator takes a batch under one lock and works through it locally, so a busy stream costs
/// about what the closure path does per event.
public struct EventStream<Event: HeraldEvent>: AsyncSequence, Sendable {
    /// One delivery: the event and its metadata.
    public typealias Element = Delivery<Event>

    let buffer: EventBuffer
    /// Where an event that does not decode is reported (the subscription's
    /// `onDecodingFailure`, else the client's error handler).
    let onFailure: @Sendable (HeraldClientError, EventMetadata) -> Void
    /// The subscription; cancelling it finishes the stream.
    public let subscription: Subscription

    /// Events dropped so far because the consumer fell behind the buffer.
    public var droppedCount: Int { buffer.droppedCount }

    /// Makes the iterator (it keeps the subscription alive while iterating).
    public func makeAsyncIterator() -> Iterator {
        Iterator(buffer: buffer, onFailure: onFailure, subscription: subscription)
    }

    /// Iterates deliveries.
    public struct Iterator: AsyncIteratorProtocol {
        let buffer: EventBuffer
        let onFailure: @Sendable (HeraldClientError, EventMetadata) -> Void
        let subscription: Subscription
        /// The batch being worked through, and the position in it.
        var batch: [EventBuffer.Item] = []
        var position = 0

        init(buffer: EventBuffer, onFailure: @escaping @Sendable (HeraldClientError, EventMetadata) -> Void, subscription: Subscription) {
            self.buffer = buffer
            self.onFailure = onFailure
            self.subscription = subscription
        }

        /// The next delivery, or nil when the stream finished.
        public mutating func next() async -> Delivery<Event>? {
            await next(isolation: nil)
        }

        /// The next delivery (isolation-preserving form).
        public mutating func next(isolation actor: isolated (any Actor)?) async -> Delivery<Event>? {
            while true {
                while position < batch.count {
                    let item = batch[position]
                    position += 1
                    if let delivery = decoded(item) { return delivery }
                }
                // The used batch goes back to be freed on the I/O thread (`ReturnedBatches`).
                buffer.giveBack(batch)
                batch = []
                batch = await buffer.take(isolation: actor)
                position = 0
                if batch.isEmpty { return nil }
            }
        }

        /// Decodes one queued event; a failure is reported and the event skipped.
        private func decoded(_ item: EventBuffer.Item) -> Delivery<Event>? {
            do throws(HeraldClientError) {
                return try item.delivery(Event.self)
            } catch {
                onFailure(error, item.incoming.metadata)
                return nil
            }
        }
    }
}

extension EventBuffer.Item {
    /// Decodes the event, with the local drops it carries added to its metadata.
    func delivery<Event: HeraldEvent>(_ type: Event.Type) throws(HeraldClientError) -> Delivery<Event> {
        let event = try incoming.decode(Event.self)
        return Delivery(event: event, metadata: dropped == 0 ? incoming.metadata : incoming.metadata.addingDrops(dropped))
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
        let (buffer, subscription) = try streamSubscription(topic.channel, options: options, buffering: buffering)
        let onError = options.onError
        let onFailure: @Sendable (HeraldClientError, EventMetadata) -> Void = options.onDecodingFailure ?? { [weak self] error, _ in
            self?.report(error, to: onError)
        }
        return EventStream(buffer: buffer, onFailure: onFailure, subscription: subscription)
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

    /// Subscribes for a stream: the I/O thread hands the events to `buffer` in batches; the
    /// stream ends when the subscription does; the consumer stopping unsubscribes.
    func streamSubscription(_ channel: Channel, options: SubscriptionOptions,
                            buffering: StreamBuffering) throws(HeraldClientError) -> (EventBuffer, Subscription) {
        let buffer = EventBuffer(buffering: buffering)
        // `DeliveryBatch` appends to the buffer itself (a batch at a time); the per-event
        // handler is only the binding's required fallback.
        let binding = try bind(channel, options: options, target: .stream(buffer), ownerAlive: nil,
                               onEnd: { buffer.finish() }) { incoming in buffer.append([incoming]) }
        buffer.setOnTermination { [weak self] in self?.unbind(binding) }
        return (buffer, Subscription(binding: binding, channel: channel, client: self, cancelsOnDeinit: true))
    }
}
