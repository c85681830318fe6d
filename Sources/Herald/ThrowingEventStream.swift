/// Typed events as a throwing `AsyncSequence`: like ``EventStream``, but an event that does not
/// decode ends the sequence with an ``EventDecodingError`` (naming the channel and `seq`)
/// instead of being skipped.
///
/// The choice between the two is the caller's: ``EventStream`` (`HeraldClient.events`) for a
/// feed where one bad event should not stop the rest, this one where a bad event means the
/// consumer cannot go on (a schema change, a protocol it must not misread).
///
/// The events before the bad one are delivered first; the error is thrown in place of the bad
/// event, and the subscription is cancelled then (`subscription.endReason` is `.cancelled`), so
/// later `next()` calls return nil. Otherwise it behaves as ``EventStream``: one consumer, the
/// stated buffering policy (drops counted in `droppedCount`, reported in `metadata.dropped`),
/// unsubscribed when the stream and its iterators are gone or the consuming task is cancelled,
/// finished (without an error) when the subscription ends or the client closes.
public struct ThrowingEventStream<Event: HeraldEvent>: AsyncSequence, Sendable {
    /// One delivery: the event and its metadata.
    public typealias Element = Delivery<Event>
    /// What the sequence throws: the event that did not decode.
    public typealias Failure = EventDecodingError

    let buffer: EventBuffer
    /// The subscription; cancelling it finishes the stream.
    public let subscription: Subscription

    /// Events dropped so far because the consumer fell behind the buffer.
    public var droppedCount: Int { buffer.droppedCount }

    /// Makes the iterator (it keeps the subscription alive while iterating).
    public func makeAsyncIterator() -> Iterator {
        Iterator(buffer: buffer, subscription: subscription)
    }

    /// Iterates deliveries until the stream ends or an event does not decode.
    public struct Iterator: AsyncIteratorProtocol {
        /// What `next` throws: the event that did not decode.
        public typealias Failure = EventDecodingError

        let buffer: EventBuffer
        let subscription: Subscription
        /// The batch being worked through, and the position in it.
        var batch: [EventBuffer.Item] = []
        var position = 0
        /// Set once an error was thrown: the sequence is over.
        var failed = false

        init(buffer: EventBuffer, subscription: Subscription) {
            self.buffer = buffer
            self.subscription = subscription
        }

        /// The next delivery, or nil when the stream finished.
        /// - Throws: ``EventDecodingError`` for an event that does not decode (once; the stream
        ///   ends with it).
        public mutating func next() async throws(EventDecodingError) -> Delivery<Event>? {
            try await next(isolation: nil)
        }

        /// The next delivery (isolation-preserving form).
        /// - Parameter actor: the caller's actor, kept while waiting.
        /// - Throws: ``EventDecodingError`` for an event that does not decode (once; the stream
        ///   ends with it).
        public mutating func next(isolation actor: isolated (any Actor)?) async throws(EventDecodingError) -> Delivery<Event>? {
            while !failed {
                while position < batch.count {
                    let item = batch[position]
                    position += 1
                    do throws(HeraldClientError) {
                        return try item.delivery(Event.self)
                    } catch {
                        failed = true
                        batch = []
                        buffer.terminate()
                        throw EventDecodingError(error: error, metadata: item.incoming.metadata, data: item.incoming.data)
                    }
                }
                // The used batch goes back to be freed on the I/O thread (`ReturnedBatches`).
                buffer.giveBack(batch)
                batch = []
                batch = await buffer.take(isolation: actor)
                position = 0
                if batch.isEmpty { return nil }
            }
            return nil
        }
    }
}

extension HeraldClient {
    /// Subscribes to a typed topic as a throwing `AsyncSequence`: an event that does not
    /// decode ends it with an ``EventDecodingError`` rather than being skipped.
    ///
    ///     let moves = try client.throwingEvents(Car.moved(id: 42))
    ///     do throws(EventDecodingError) {
    ///         for try await delivery in moves {
    ///             print(delivery.event.x, delivery.metadata.seq ?? 0)
    ///         }
    ///     } catch {
    ///         print("car 42 sent something else on \(error.channel), seq \(error.seq ?? 0): \(error.error)")
    ///     }
    /// - Parameters:
    ///   - topic: the channel or pattern.
    ///   - options: name, group, max, args, current, since. `onDecodingFailure` is not called
    ///     (the failure is thrown instead, and the error handler is not told); `delivery` does
    ///     not apply: the consumer decides.
    ///   - buffering: what to keep while the consumer lags (default: newest 1024).
    /// - Returns: the stream.
    /// - Throws: `.badChannel`, `.closed`.
    public func throwingEvents<Event: HeraldEvent>(
        _ topic: Topic<Event>, options: SubscriptionOptions = SubscriptionOptions(),
        buffering: StreamBuffering = .newest(1024)
    ) throws(HeraldClientError) -> ThrowingEventStream<Event> {
        let (buffer, subscription) = try streamSubscription(topic.channel, options: options, buffering: buffering)
        return ThrowingEventStream(buffer: buffer, subscription: subscription)
    }

    /// The throwing stream form for an event type's home channel.
    /// - Parameters:
    ///   - type: the event type.
    ///   - options: name, group, max, args, current, since.
    ///   - buffering: what to keep while the consumer lags.
    /// - Returns: the stream.
    /// - Throws: `.badChannel`, `.closed`.
    public func throwingEvents<Event: HeraldEvent>(
        _ type: Event.Type, options: SubscriptionOptions = SubscriptionOptions(),
        buffering: StreamBuffering = .newest(1024)
    ) throws(HeraldClientError) -> ThrowingEventStream<Event> {
        try throwingEvents(Event.topic, options: options, buffering: buffering)
    }
}
