import Dispatch

/// Subscriptions whose handlers are isolated to the main actor: a view controller or view model
/// can be called directly, with no `Task { @MainActor in … }` hop in every handler.
///
/// Events are queued on the main dispatch queue in arrival order (delivery mode `.mainActor`),
/// and a cancelled subscription is checked again right before each call, as for every mode.
extension HeraldClient {
    /// Subscribes to a typed topic with a `@MainActor` handler.
    ///
    ///     let token = try client.subscribeOnMain(ProfileSaved.topic) { saved, _ in
    ///         self.label.text = "saved \(saved.userID)"          // main actor: UI is fine here
    ///     }
    /// - Parameters:
    ///   - topic: the channel or pattern, typed by its event.
    ///   - options: name, group, max, args (`delivery` is `.mainActor` whatever it says).
    ///   - handler: called per event on the main actor.
    /// - Returns: the subscription token (releasing it unsubscribes).
    /// - Throws: `.badChannel` for an invalid pattern, `.closed` after `close()`.
    public func subscribeOnMain<Event: HeraldEvent>(
        _ topic: Topic<Event>, options: SubscriptionOptions = SubscriptionOptions(),
        handler: @escaping @MainActor (Event, EventMetadata) -> Void
    ) throws(HeraldClientError) -> Subscription {
        let onMain: @Sendable (Event, EventMetadata) -> Void = { event, metadata in
            MainActor.assumeIsolated { handler(event, metadata) }
        }
        let binding = try bind(topic.channel, options: options, target: queue(for: .mainActor), ownerAlive: nil,
                               deliver: decoding(Event.self, options: options, onMain))
        return Subscription(binding: binding, channel: topic.channel, client: self, cancelsOnDeinit: true)
    }

    /// Subscribes to an event type's home channel with a `@MainActor` handler.
    /// - Parameters:
    ///   - type: the event type; its `channel` is subscribed.
    ///   - options: name, group, max, args.
    ///   - handler: called per event on the main actor.
    /// - Returns: the subscription token (releasing it unsubscribes).
    /// - Throws: `.badChannel`, `.closed`.
    public func subscribeOnMain<Event: HeraldEvent>(
        _ type: Event.Type, options: SubscriptionOptions = SubscriptionOptions(),
        handler: @escaping @MainActor (Event, EventMetadata) -> Void
    ) throws(HeraldClientError) -> Subscription {
        try subscribeOnMain(Event.topic, options: options, handler: handler)
    }

    /// Subscribes for as long as a main-actor `owner` lives; the owner need not be `Sendable`.
    ///
    /// The owner form for UI objects: `owner` is held weakly and read only on the main actor,
    /// the handler gets it back there, and after it is released the handler is never called
    /// again (the daemon is told within about two seconds, or at the next event).
    ///
    ///     @MainActor final class CarViewController: UIViewController {
    ///         func follow(_ client: HeraldClient, id: Int) throws {
    ///             try client.subscribeOnMain(Car.moved(id: id), owner: self) { controller, moved, _ in
    ///                 controller.move(to: moved)
    ///             }
    ///         }
    ///     }
    /// - Parameters:
    ///   - topic: the channel or pattern.
    ///   - owner: the object whose lifetime bounds the subscription (held weakly).
    ///   - options: name, group, max, args.
    ///   - handler: called on the main actor with the owner, the event and its metadata.
    /// - Returns: a token; keeping it is optional (releasing it does not unsubscribe).
    /// - Throws: `.badChannel`, `.closed`.
    @MainActor @discardableResult
    public func subscribeOnMain<Event: HeraldEvent, Owner: AnyObject>(
        _ topic: Topic<Event>, owner: Owner, options: SubscriptionOptions = SubscriptionOptions(),
        handler: @escaping @MainActor (Owner, Event, EventMetadata) -> Void
    ) throws(HeraldClientError) -> Subscription {
        let reference = MainActorOwner(owner)
        let onMain: @Sendable (Event, EventMetadata) -> Void = { event, metadata in
            MainActor.assumeIsolated {
                guard let owner = reference.current else { return }
                handler(owner, event, metadata)
            }
        }
        let probe: @Sendable (SubscriptionBinding) -> Void = { [weak self] binding in
            DispatchQueue.main.async {
                let gone = MainActor.assumeIsolated { reference.current == nil }
                if gone { self?.unbind(binding) }
            }
        }
        let binding = try bind(topic.channel, options: options, target: queue(for: .mainActor),
                               ownerAlive: { !reference.isGone }, ownerProbe: probe,
                               deliver: decoding(Event.self, options: options, onMain))
        return Subscription(binding: binding, channel: topic.channel, client: self, cancelsOnDeinit: false)
    }

    /// The main-actor owner form for an event type's home channel.
    /// - Parameters:
    ///   - type: the event type.
    ///   - owner: held weakly; the subscription ends with it.
    ///   - options: name, group, max, args.
    ///   - handler: called on the main actor with the owner, the event and its metadata.
    /// - Returns: a token; keeping it is optional.
    /// - Throws: `.badChannel`, `.closed`.
    @MainActor @discardableResult
    public func subscribeOnMain<Event: HeraldEvent, Owner: AnyObject>(
        _ type: Event.Type, owner: Owner, options: SubscriptionOptions = SubscriptionOptions(),
        handler: @escaping @MainActor (Owner, Event, EventMetadata) -> Void
    ) throws(HeraldClientError) -> Subscription {
        try subscribeOnMain(Event.topic, owner: owner, options: options, handler: handler)
    }
}
