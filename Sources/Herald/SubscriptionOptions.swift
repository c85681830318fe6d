import Dispatch

/// Where a subscription's handler runs.
public enum DeliveryMode: Sendable, Equatable {
    /// On the client's one serial queue, in arrival order across all `.ordered` subscriptions.
    case ordered
    /// On a concurrent queue: handlers may run at the same time and out of order.
    case background
    /// On the main actor (the main dispatch queue), in arrival order across all `.mainActor`
    /// subscriptions; for handlers typed `@MainActor`, use `HeraldClient.subscribeOnMain`.
    case mainActor
}

/// The options of one subscription, as the daemon's `sub` op takes them.
public struct SubscriptionOptions: Sendable {
    /// The subscription's name; binding again under the same name replaces it. nil: assigned.
    public var name: String?
    /// Queue group: each event goes to one member of the group (same group and pattern).
    public var group: String?
    /// End after this many deliveries (the daemon counts; the client restores the remainder).
    public var max: Int?
    /// Arguments echoed with every event (`EventMetadata.args`), encoded as JSON.
    public var args: RawJSON?
    /// Where the handler runs.
    public var delivery: DeliveryMode
    /// Called once when the subscription ends, with why (e.g. `.removed` when the owner of an
    /// instance channel removed it). Runs where the handler runs, after the events already
    /// queued for it, so it is the last call the subscription makes.
    public var onEnd: (@Sendable (SubscriptionEnd) -> Void)?
    /// Called with an event that does not decode as the subscription's type (and its
    /// metadata), where the handler runs; the event is skipped. nil: the client's error handler
    /// gets the `.decoding` error instead. Raw subscriptions never call it.
    public var onDecodingFailure: (@Sendable (HeraldClientError, EventMetadata) -> Void)?
    /// Ask for the retained state first (`current:true`): one `kind:"current"` event per
    /// matching channel that holds a value or list, also after every reconnect.
    public var current: Bool = false
    /// Replay the channel's history after this `seq` first (`since`; concrete channels only).
    /// The daemon keeps the last `history` events per channel; when it no longer holds every
    /// event after `since`, the token's ``Subscription/recovered`` is `false` and the error
    /// handler gets ``HeraldClientError/historyLost(subscription:channel:)``. Replayed events
    /// have `EventMetadata.isReplay`. After a reconnect the client asks from the last `seq` it saw.
    public var since: Int?
    /// Called when the daemon says this subscription will never get some events (a `gap`
    /// frame, cluster mode: a primary lost them, or a read back after an outage could not find
    /// them). Runs where the handler runs, after the events before the gap and before those
    /// after it (for a stream: on the client's I/O thread, when the gap arrives). nil: the
    /// client's error handler gets ``HeraldClientError/gap(_:)`` instead. Mirrors
    /// (``RemoteValue``, ``RemoteList``) read their state again on a gap.
    public var onGap: (@Sendable (EventGap) -> Void)?
    /// Where this subscription's own problems go instead of the client's error handler:
    /// ``HeraldClientError/historyLost(subscription:channel:)`` (a `since` the daemon could not
    /// serve), ``HeraldClientError/restoreFailed(kind:channel:cause:)`` (its restore after a
    /// reconnect was refused for good: `forbidden` after a permission was revoked, …),
    /// ``HeraldClientError/subscriptionEnded(subscription:channel:reason:)``, and an event that
    /// does not decode when `onDecodingFailure` is nil. Called on an arbitrary thread; must not
    /// block. nil (the default): the client's error handler.
    public var onError: (@Sendable (HeraldClientError) -> Void)?

    /// Creates options.
    /// - Parameters:
    ///   - name: the subscription name (unique per connection).
    ///   - group: queue group name.
    ///   - max: number of deliveries before the subscription ends.
    ///   - args: JSON echoed with each event.
    ///   - delivery: `.ordered` (default), `.background` or `.mainActor`.
    ///   - current: ask for the retained state first (`current:true`).
    ///   - since: replay history after this `seq` first (concrete channels only).
    ///   - onEnd: called once when the subscription ends, with the reason.
    ///   - onDecodingFailure: called with an event that does not decode as the handler's type.
    ///   - onGap: called when the daemon says events will never arrive (`gap`).
    ///   - onError: where this subscription's problems go (default: the client's handler).
    public init(name: String? = nil, group: String? = nil, max: Int? = nil, args: RawJSON? = nil,
                delivery: DeliveryMode = .ordered, current: Bool = false, since: Int? = nil, onEnd: (@Sendable (SubscriptionEnd) -> Void)? = nil,
                onDecodingFailure: (@Sendable (HeraldClientError, EventMetadata) -> Void)? = nil,
                onGap: (@Sendable (EventGap) -> Void)? = nil, onError: (@Sendable (HeraldClientError) -> Void)? = nil) {
        self.onError = onError
        self.name = name
        self.group = group
        self.max = max
        self.args = args
        self.delivery = delivery
        self.current = current
        self.since = since
        self.onEnd = onEnd
        self.onDecodingFailure = onDecodingFailure
        self.onGap = onGap
    }

    /// One delivery, then the subscription ends (`once:true`).
    public static var once: SubscriptionOptions { SubscriptionOptions(max: 1) }
}

/// How an ``EventStream`` buffers events its consumer has not taken yet.
public enum StreamBuffering: Sendable, Equatable {
    /// Keep everything (memory grows with a slow consumer).
    case unbounded
    /// Keep the newest `n`; older ones are dropped and counted.
    case newest(Int)
    /// Keep the oldest `n`; newer ones are dropped and counted.
    case oldest(Int)
}
