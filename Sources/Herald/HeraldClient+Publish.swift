/// What the daemon says about a publication sent with a receipt.
public struct PublishReceipt: Sendable, Equatable {
    /// The event's sequence number on its channel.
    public let seq: Int
    /// The number of subscriptions it was delivered to.
    public let receivers: Int

    /// Creates a receipt (the client builds them from the daemon's answer; tests compare).
    /// - Parameters:
    ///   - seq: the event's `seq`.
    ///   - receivers: the subscriptions it reached.
    public init(seq: Int, receivers: Int) {
        self.seq = seq
        self.receivers = receivers
    }
}

/// Publishing: with a receipt (awaited) or fire-and-forget.
extension HeraldClient {
    /// Publishes an event on its home channel and waits for the daemon's receipt.
    /// - Parameter event: the event; its type's `channel` must be concrete.
    /// - Returns: the channel `seq` and the number of receivers.
    /// - Throws: `.badChannel`, `.encoding`, `.notConnected`, the daemon's error, `.timeout`.
    @discardableResult
    public func publish<Event: HeraldEvent>(_ event: Event) async throws(HeraldClientError) -> PublishReceipt {
        try await publish(event, to: Event.topic)
    }

    /// Publishes an event on a topic (e.g. an instance channel `Car.moved(id: 42)`) with a receipt.
    /// - Parameters:
    ///   - event: the event.
    ///   - topic: a concrete channel carrying `Event`.
    /// - Returns: the channel `seq` and the number of receivers.
    /// - Throws: `.badChannel`, `.encoding`, `.notConnected`, the daemon's error, `.timeout`.
    @discardableResult
    public func publish<Event: HeraldEvent>(_ event: Event, to topic: Topic<Event>) async throws(HeraldClientError) -> PublishReceipt {
        try await publish(raw: try RawJSON(encoding: event), to: topic.channel)
    }

    /// Publishes raw JSON (or nothing) with a receipt; for tools that pass data through.
    /// - Parameters:
    ///   - data: one JSON value, or nil for an event without data.
    ///   - channel: a concrete channel.
    /// - Returns: the channel `seq` and the number of receivers.
    /// - Throws: `.badChannel`, `.notConnected`, the daemon's error (e.g. `bad_json`), `.timeout`.
    @discardableResult
    public func publish(raw data: RawJSON?, to channel: Channel) async throws(HeraldClientError) -> PublishReceipt {
        let name = try channel.validatedConcrete().name
        if let bound = configuration.offlinePublishing {
            let frame = try await publishKept(raw: data, channel: name, bound: bound)
            return PublishReceipt(seq: frame.int("seq") ?? 0, receivers: frame.int("receivers") ?? 0)
        }
        let frame = try await ask("pub") { writer in
            writer.string("ch", name)
            writer.raw("data", data)
        }
        return PublishReceipt(seq: frame.int("seq") ?? 0, receivers: frame.int("receivers") ?? 0)
    }

    /// Publishes without waiting: returns once the frame is queued; a daemon error for it goes
    /// to the error handler. Frames queued before `close()` are still written.
    /// - Parameter event: the event; its type's `channel` must be concrete.
    /// - Throws: `.badChannel`, `.encoding`, `.notConnected`, `.closed`.
    public func post<Event: HeraldEvent>(_ event: Event) throws(HeraldClientError) {
        try post(event, to: Event.topic)
    }

    /// Publishes on a topic without waiting.
    /// - Parameters:
    ///   - event: the event.
    ///   - topic: a concrete channel carrying `Event`.
    /// - Throws: `.badChannel`, `.encoding`, `.notConnected`, `.closed`.
    public func post<Event: HeraldEvent>(_ event: Event, to topic: Topic<Event>) throws(HeraldClientError) {
        try post(raw: try RawJSON(encoding: event), to: topic.channel)
    }

    /// Publishes raw JSON without waiting.
    /// - Parameters:
    ///   - data: one JSON value, or nil.
    ///   - channel: a concrete channel.
    /// - Throws: `.badChannel`, `.notConnected`, `.closed`.
    public func post(raw data: RawJSON?, to channel: Channel) throws(HeraldClientError) {
        let name = try channel.validatedConcrete().name
        if let bound = configuration.offlinePublishing {
            try postKept(raw: data, channel: name, bound: bound)
            return
        }
        var writer = FrameWriter(op: "pub")
        writer.string("ch", name)
        writer.raw("data", data)
        let line = writer.finished()
        let limit = configuration.maxOutboundBytes
        let wake = try state.withLock { state throws(HeraldClientError) -> Bool in
            if state.closed { throw .closed }
            guard state.linkUp else { throw .notConnected }
            guard state.outboundBytes <= limit else { throw .outboundFull(bytes: limit) }
            return state.enqueue(line)
        }
        if wake { loop.wake() }
    }
}
