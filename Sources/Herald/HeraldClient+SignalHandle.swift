/// Handling signals (docs/protocol.md "Signals (responder chain)"): a handler subscription
/// (`sub` with `handle:true`) is offered signals at its level and answers `pass` or `stop`.
extension HeraldClient {
    /// Handles a signal type at its home channel (or pattern).
    ///
    ///     try client.handle(Save.self) { save, context in
    ///         try context.callback(["saving": true])
    ///         return .stop
    ///     }
    ///
    /// Each offer runs the handler in its own task. A handler that throws, or a signal that
    /// does not decode as `Signal`, goes to the error handler and counts as `.pass`. For a
    /// ``HeraldSignal`` type, offers of another kind pass silently (the handler is not called).
    /// - Parameters:
    ///   - type: the signal type; its `channel` is the level handled.
    ///   - options: name, `max`, `args`, `group` (`delivery` does not apply: each offer runs in a task).
    ///   - handler: returns `.pass` or `.stop`; may call `context.callback` before.
    /// - Returns: the subscription token (releasing it stops handling).
    /// - Throws: `.badChannel`, `.closed`.
    public func handle<Signal: HeraldEvent>(
        _ type: Signal.Type, options: SubscriptionOptions = SubscriptionOptions(),
        handler: @escaping @Sendable (Signal, SignalContext) async throws -> SignalAction
    ) throws(HeraldClientError) -> Subscription {
        try handle(raw: Signal.channel, options: options) { data, context in
            // Another kind of signal at this level: not for this handler, and not an error.
            guard Self.offerMatches(data, as: Signal.self) else { return .pass }
            let signal: Signal
            do throws(HeraldClientError) {
                signal = try (data ?? RawJSON("{}")).decode(as: Signal.self)
            } catch {
                if case .decoding(let type, _, let message) = error {
                    throw HeraldClientError.decoding(type: type, channel: context.level.name, message: message)
                }
                throw error
            }
            return try await handler(signal, context)
        }
    }

    /// Handles signals at a channel or pattern, untyped.
    /// - Parameters:
    ///   - channel: the level (or pattern of levels) handled.
    ///   - options: name, `max`, `args`.
    ///   - handler: gets the raw `data` (nil when none); returns `.pass` or `.stop`.
    /// - Returns: the subscription token (releasing it stops handling).
    /// - Throws: `.badChannel`, `.closed`.
    public func handle(
        raw channel: Channel, options: SubscriptionOptions = SubscriptionOptions(),
        handler: @escaping @Sendable (RawJSON?, SignalContext) async throws -> SignalAction
    ) throws(HeraldClientError) -> Subscription {
        let offered: @Sendable (IncomingSignal) -> Void = { [weak self] offer in
            guard let self else { return }
            let context = SignalContext(offer: offer, client: self)
            Task { [weak self] in
                var action = SignalAction.pass
                do {
                    action = try await handler(offer.data, context)
                } catch let error as HeraldClientError {
                    self?.report(error)
                } catch {
                    self?.report(.signalHandlerFailed(subscription: offer.subscription, channel: offer.level,
                                                      message: String(describing: error)))
                }
                context.answer(action)
            }
        }
        let binding = try bind(channel, options: options, target: queue(for: options.delivery), ownerAlive: nil,
                               signal: offered) { _ in }
        return Subscription(binding: binding, channel: channel, client: self, cancelsOnDeinit: true)
    }

    /// A signal offer arrived (I/O thread): hand it to its handler, or pass at once when the
    /// handler is gone, so the sender does not wait out the timeout.
    func handleSignalOffer(_ frame: ServerFrame) {
        guard let offer = IncomingSignal(frame: frame) else {
            report(.malformedFrame(String(decoding: frame.bytes.prefix(200), as: UTF8.self)))
            return
        }
        let name = offer.subscription
        let target = state.withLock { state -> ((@Sendable (IncomingSignal) -> Void), SubscriptionBinding, Bool)? in
            guard var record = state.subscriptions[name], record.acked, let handler = record.signalHandler,
                  !record.binding.isCancelled else { return nil }
            if let remaining = record.remaining { record.remaining = remaining - 1 }
            let finished = offer.isLast || (record.remaining.map { $0 <= 0 } ?? false)
            state.subscriptions[name] = finished ? nil : record
            return (handler, record.binding, finished)
        }
        guard let (handler, binding, finished) = target else {
            loop.backlog.append(contentsOf: Self.handledLine(id: offer.id, action: .pass).finished())
            return
        }
        handler(offer)
        if finished { binding.end(.finished) }
    }

    static func handledLine(id: String, action: SignalAction) -> FrameWriter {
        var writer = FrameWriter(op: "handled")
        writer.string("id", id)
        writer.string("action", action.rawValue)
        return writer
    }
}
