/// Subscribing with a handler: the token form and the weak-owner form.
extension HeraldClient {
    /// Subscribes to a typed topic; the handler gets the decoded event and its metadata.
    ///
    /// Keep the returned token: releasing it (or calling `cancel()`) unsubscribes. Binding
    /// again under the same `options.name` replaces this subscription. Events that do not
    /// decode as `Event` go to `options.onDecodingFailure`, or else to the error handler. Works before `connect()`: the `sub` is sent
    /// once connected, and again after every reconnect.
    /// - Parameters:
    ///   - topic: the channel or pattern, typed by its event.
    ///   - options: name, group, max, args, delivery.
    ///   - handler: called per event on the queue `options.delivery` names.
    /// - Returns: the subscription token.
    /// - Throws: `.badChannel` for an invalid pattern, `.closed` after `close()`.
    public func subscribe<Event: HeraldEvent>(
        _ topic: Topic<Event>, options: SubscriptionOptions = SubscriptionOptions(),
        handler: @escaping @Sendable (Event, EventMetadata) -> Void
    ) throws(HeraldClientError) -> Subscription {
        let binding = try bind(topic.channel, options: options, target: queue(for: options.delivery), ownerAlive: nil,
                               deliver: decoding(Event.self, options: options, handler))
        return Subscription(binding: binding, channel: topic.channel, client: self, cancelsOnDeinit: true)
    }

    /// Subscribes to an event type's home channel: `client.subscribe(Moved.self) { moved, meta in … }`.
    /// - Parameters:
    ///   - type: the event type; its `channel` is subscribed.
    ///   - options: name, group, max, args, delivery.
    ///   - handler: called per event.
    /// - Returns: the subscription token (releasing it unsubscribes).
    /// - Throws: `.badChannel`, `.closed`.
    public func subscribe<Event: HeraldEvent>(
        _ type: Event.Type, options: SubscriptionOptions = SubscriptionOptions(),
        handler: @escaping @Sendable (Event, EventMetadata) -> Void
    ) throws(HeraldClientError) -> Subscription {
        try subscribe(Event.topic, options: options, handler: handler)
    }

    /// Subscribes for as long as `owner` lives: the handler gets the owner, and after the owner
    /// is deallocated it is never called again (the daemon is told within a second).
    ///
    /// This is the easy path for long-lived objects: no token to store, and `owner` is held
    /// weakly, so capturing it in the handler cannot leak it.
    /// - Parameters:
    ///   - topic: the channel or pattern.
    ///   - owner: the object whose lifetime bounds the subscription (held weakly).
    ///   - options: name, group, max, args, delivery.
    ///   - handler: called with the owner, the event and its metadata.
    /// - Returns: a token; keeping it is optional (releasing it does not unsubscribe).
    /// - Throws: `.badChannel`, `.closed`.
    @discardableResult
    public func subscribe<Event: HeraldEvent, Owner: AnyObject & Sendable>(
        _ topic: Topic<Event>, owner: Owner, options: SubscriptionOptions = SubscriptionOptions(),
        handler: @escaping @Sendable (Owner, Event, EventMetadata) -> Void
    ) throws(HeraldClientError) -> Subscription {
        let deliver: @Sendable (Event, EventMetadata) -> Void = { [weak owner] event, metadata in
            guard let owner else { return }
            handler(owner, event, metadata)
        }
        let binding = try bind(topic.channel, options: options, target: queue(for: options.delivery),
                               ownerAlive: { [weak owner] in owner != nil }, deliver: decoding(Event.self, options: options, deliver))
        return Subscription(binding: binding, channel: topic.channel, client: self, cancelsOnDeinit: false)
    }

    /// The weak-owner form for an event type's home channel.
    /// - Parameters:
    ///   - type: the event type.
    ///   - owner: held weakly; the subscription ends with it.
    ///   - options: name, group, max, args, delivery.
    ///   - handler: called with the owner, the event and its metadata.
    /// - Returns: a token; keeping it is optional.
    /// - Throws: `.badChannel`, `.closed`.
    @discardableResult
    public func subscribe<Event: HeraldEvent, Owner: AnyObject & Sendable>(
        _ type: Event.Type, owner: Owner, options: SubscriptionOptions = SubscriptionOptions(),
        handler: @escaping @Sendable (Owner, Event, EventMetadata) -> Void
    ) throws(HeraldClientError) -> Subscription {
        try subscribe(Event.topic, owner: owner, options: options, handler: handler)
    }

    /// Subscribes without a type: the handler gets the raw `data` (nil when absent).
    ///
    /// For tools and bridges that pass data on unchanged, such as the `herald` CLI.
    /// - Parameters:
    ///   - channel: the channel or pattern.
    ///   - options: name, group, max, args, delivery.
    ///   - handler: called per event.
    /// - Returns: the subscription token (releasing it unsubscribes).
    /// - Throws: `.badChannel`, `.closed`.
    public func subscribe(
        raw channel: Channel, options: SubscriptionOptions = SubscriptionOptions(),
        handler: @escaping @Sendable (RawJSON?, EventMetadata) -> Void
    ) throws(HeraldClientError) -> Subscription {
        let binding = try bind(channel, options: options, target: queue(for: options.delivery), ownerAlive: nil) { incoming in
            handler(incoming.data, incoming.metadata)
        }
        return Subscription(binding: binding, channel: channel, client: self, cancelsOnDeinit: true)
    }

    /// Unsubscribes by name (e.g. a subscription made with the owner form).
    /// - Parameter name: the subscription name.
    public func unsubscribe(name: String) {
        let binding = state.withLock { $0.subscriptions[name]?.binding }
        if let binding { unbind(binding) }
    }

    // MARK: Internals

    func queue(for mode: DeliveryMode) -> SubscriptionBinding.Target {
        switch mode {
        case .ordered: return .queue(orderedQueue)
        case .background: return .queue(backgroundQueue)
        case .mainActor: return .queue(.main)
        }
    }

    /// Wraps a typed handler: a decode failure goes to the subscription's
    /// `options.onDecodingFailure` when set (where the handler runs), else to the client's
    /// error handler; never a crash.
    func decoding<Event: HeraldEvent>(
        _ type: Event.Type, options: SubscriptionOptions, _ handler: @escaping @Sendable (Event, EventMetadata) -> Void
    ) -> @Sendable (IncomingEvent) -> Void {
        let onFailure = options.onDecodingFailure
        return { [weak self] incoming in
            do throws(HeraldClientError) {
                handler(try incoming.decode(Event.self), incoming.metadata)
            } catch {
                if let onFailure {
                    onFailure(error, incoming.metadata)
                } else {
                    self?.report(error, to: options.onError)
                }
            }
        }
    }

    /// Records a subscription and sends its `sub` when the link is up (else on connect).
    func bind(_ channel: Channel, options: SubscriptionOptions, target: SubscriptionBinding.Target,
              ownerAlive: (@Sendable () -> Bool)?, ownerProbe: (@Sendable (SubscriptionBinding) -> Void)? = nil,
              onEnd: (@Sendable () -> Void)? = nil, onAcknowledged: (@Sendable () -> Void)? = nil,
              signal: (@Sendable (IncomingSignal) -> Void)? = nil,
              deliver: @escaping @Sendable (IncomingEvent) -> Void) throws(HeraldClientError) -> SubscriptionBinding {
        let isPattern = try channel.validatedPattern()
        if let max = options.max, max < 1 { throw .server(code: "bad_field", message: "max must be at least 1", op: "sub") }
        if let since = options.since, since < 0 || isPattern {
            throw .server(code: "bad_field", message: "since needs a concrete channel and a seq of at least 0", op: "sub")
        }
        let (binding, replaced, wake) = try state.withLock { state throws(HeraldClientError) in
            if state.closed { throw .closed }
            let id = state.nextBindingID
            state.nextBindingID += 1
            let binding = SubscriptionBinding(name: options.name ?? "h\(id)", id: id, target: target,
                                              ownerAlive: ownerAlive, ownerProbe: ownerProbe, onEnd: onEnd, notify: options.onEnd,
                                              onGap: options.onGap, onAcknowledged: onAcknowledged, onError: options.onError,
                                              deliver: deliver)
            let replaced = state.subscriptions[binding.name]?.binding
            var record = SubscriptionRecord(binding: binding, channel: channel, isPattern: isPattern, group: options.group,
                                            remaining: options.max, args: options.args, order: state.nextOrder)
            record.signalHandler = signal
            record.current = options.current
            record.requestedSince = options.since
            record.lastSeq = options.since
            record.refetchesOnRestore = onAcknowledged != nil
            state.nextOrder += 1
            state.subscriptions[binding.name] = record
            var wake = false
            if state.linkUp { wake = state.enqueue(subscribeLine(record, since: options.since, restoring: false, state: &state)) }
            return (binding, replaced, wake)
        }
        replaced?.cancel()
        if wake { loop.wake() }
        return binding
    }

    /// Ends a binding: removes it if it is still the one under its name, tells the daemon.
    func unbind(_ binding: SubscriptionBinding) {
        binding.cancel()
        let wake = state.withLock { state -> Bool in
            guard state.subscriptions[binding.name]?.binding === binding else { return false }
            state.subscriptions[binding.name] = nil
            return state.linkUp && state.enqueue(unsubscribeLine(binding.name))
        }
        if wake { loop.wake() }
    }

    /// Whether `binding` is still the live subscription under its name.
    func isBound(_ binding: SubscriptionBinding) -> Bool {
        state.withLock { $0.subscriptions[binding.name]?.binding === binding }
    }
}
