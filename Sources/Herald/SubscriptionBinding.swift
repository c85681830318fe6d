import Dispatch
import Synchronization

/// The handler side of one subscription: what to call, where, and whether it is still wanted.
///
/// A class with an atomic `cancelled` flag because cancelling (from `deinit`, `cancel()` or a
/// dead owner) must take effect synchronously: a delivery already queued checks the flag again
/// right before calling the handler (NOTES-client.md).
final class SubscriptionBinding: Sendable {
    /// Where the handler runs.
    enum Target: Sendable {
        /// Handed to a stream's buffer, a read pass's events at a time (see `EventBuffer`).
        case stream(EventBuffer)
        /// Dispatched to a queue (`.ordered`: the client's serial queue; `.background`: concurrent).
        case queue(DispatchQueue)
    }

    /// The subscription name on the wire.
    let name: String
    /// Unique per client, to tell a binding from the one that replaced it under the same name.
    let id: Int
    let target: Target
    let deliver: @Sendable (IncomingEvent) -> Void
    /// False once a weak owner is gone; nil when there is no owner.
    let ownerAlive: (@Sendable () -> Bool)?
    /// For an owner that may only be touched on its own actor (a `@MainActor` owner): asked by
    /// the once-a-second sweep to check the owner there and unbind when it is gone.
    let ownerProbe: (@Sendable (SubscriptionBinding) -> Void)?
    /// Called on the I/O thread each time the daemon confirms a `sub` of this binding (the
    /// first and every restore after a reconnect), before `ready()` returns: a mirror that
    /// reads its state again rather than catching up with `since` (``RemotePresence``).
    let onAcknowledged: (@Sendable () -> Void)?
    /// The app's `SubscriptionOptions.onError`: where this subscription's problems go
    /// (`historyLost`, a refused restore or `sub`); nil: the client's error handler.
    let onError: (@Sendable (HeraldClientError) -> Void)?
    /// The app's `SubscriptionOptions.onGap` (a mirror's re-read), nil when it set none.
    private let onGap: (@Sendable (EventGap) -> Void)?
    private let ending: Mutex<Ending>
    private let cancelled = Atomic<Bool>(false)
    private let readiness = Mutex<Readiness>(Readiness())
    /// The last catch-up's outcome: 0 none asked, 1 recovered, 2 events may be missing.
    private let recovery = Atomic<Int>(0)

    private struct Readiness {
        var outcome: Result<Void, HeraldClientError>?
        var waiters: [Int: CheckedContinuation<Result<Void, HeraldClientError>, Never>] = [:]
        var nextWaiter = 0
    }

    /// The end, recorded once: the first reason wins, later calls do nothing.
    private struct Ending {
        var reason: SubscriptionEnd?
        /// Internal end action (a stream finishes here), run once.
        var finish: (@Sendable () -> Void)?
        /// The app's `SubscriptionOptions.onEnd`, run once on the handler's queue.
        var notify: (@Sendable (SubscriptionEnd) -> Void)?
        var waiters: [Int: CheckedContinuation<Result<SubscriptionEnd, HeraldClientError>, Never>] = [:]
        var nextWaiter = 0
    }

    init(name: String, id: Int, target: Target, ownerAlive: (@Sendable () -> Bool)? = nil,
         ownerProbe: (@Sendable (SubscriptionBinding) -> Void)? = nil, onEnd: (@Sendable () -> Void)? = nil, notify: (@Sendable (SubscriptionEnd) -> Void)? = nil,
         onGap: (@Sendable (EventGap) -> Void)? = nil, onAcknowledged: (@Sendable () -> Void)? = nil,
         onError: (@Sendable (HeraldClientError) -> Void)? = nil,
         deliver: @escaping @Sendable (IncomingEvent) -> Void) {
        self.onAcknowledged = onAcknowledged
        self.onError = onError
        self.name = name
        self.id = id
        self.target = target
        self.ownerAlive = ownerAlive
        self.ownerProbe = ownerProbe
        self.ending = Mutex(Ending(finish: onEnd, notify: notify))
        self.onGap = onGap
        self.deliver = deliver
    }

    /// Hands a `gap` to `onGap` where the handler runs, behind the events already queued (the
    /// I/O thread flushed them first); checked for cancellation and a gone owner again right
    /// before the call, as events are.
    /// - Returns: false when the subscription has no `onGap` (the caller reports the gap).
    func tell(_ gap: EventGap) -> Bool {
        guard let onGap else { return false }
        let call: @Sendable () -> Void = { [self] in
            if !isCancelled, ownerAlive?() ?? true { onGap(gap) }
        }
        switch target {
        case .stream: call()
        case .queue(let queue): queue.async(execute: call)
        }
        return true
    }

    var isCancelled: Bool { cancelled.load(ordering: .acquiring) }

    /// Marks the binding dead; no handler call starts after this returns. Ends it.
    func cancel() {
        cancelled.store(true, ordering: .releasing)
        end(.cancelled)
        settle(.failure(.closed))
    }

    /// Ends the subscription for `reason`, once: finishes a stream, queues the app's `onEnd`
    /// behind the events already queued (so it is the last thing the handler side sees), and
    /// wakes `ended()` waiters. Later calls (another reason racing) do nothing.
    func end(_ reason: SubscriptionEnd) {
        let taken = ending.withLock { ending -> Ending? in
            guard ending.reason == nil else { return nil }
            ending.reason = reason
            defer {
                ending.finish = nil
                ending.notify = nil
                ending.waiters = [:]
            }
            return ending
        }
        guard let taken else { return }
        taken.finish?()
        if let notify = taken.notify {
            switch target {
            case .stream: notify(reason)
            case .queue(let queue): queue.async { notify(reason) }
            }
        }
        for waiter in taken.waiters.values { waiter.resume(returning: .success(reason)) }
    }

    /// Why the subscription ended; nil while it is live.
    var endReason: SubscriptionEnd? { ending.withLock { $0.reason } }

    /// Waits until the subscription ends and returns why; `.cancelled` when the task is.
    func ended() async -> Result<SubscriptionEnd, HeraldClientError> {
        let slot = CancellationSlot()
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let id = ending.withLock { ending -> Int? in
                    if ending.reason != nil { return nil }
                    let id = ending.nextWaiter
                    ending.nextWaiter += 1
                    ending.waiters[id] = continuation
                    return id
                }
                guard let id else {
                    continuation.resume(returning: .success(endReason ?? .cancelled))
                    return
                }
                // Strong: the slot lives only until this wait ends, and a weak reference would
                // give the binding a side table, slowing every retain of it on the event path.
                slot.arm { [self] in
                    let waiter = ending.withLock { $0.waiters.removeValue(forKey: id) }
                    waiter?.resume(returning: .failure(.cancelled))
                }
            }
        } onCancel: {
            slot.cancel()
        }
    }

    /// Calls the handler unless the subscription was cancelled or its owner is gone meanwhile
    /// (checked right before the call: `cancel()` may have run while the event waited).
    func deliverIfWanted(_ event: IncomingEvent) {
        guard !isCancelled, ownerAlive?() ?? true else { return }
        deliver(event)
    }

    /// Records whether the last catch-up (`since`, or a restore after a reconnect) was complete.
    func recordRecovery(_ recovered: Bool) {
        recovery.store(recovered ? 1 : 2, ordering: .releasing)
    }

    /// The last catch-up's outcome; nil when none was asked for.
    var recovered: Bool? {
        switch recovery.load(ordering: .acquiring) {
        case 1: return true
        case 2: return false
        default: return nil
        }
    }

    /// Records the daemon's first answer to the `sub` (ok or error) for `ready()`.
    func settle(_ outcome: Result<Void, HeraldClientError>) {
        let waiters = readiness.withLock { state -> [CheckedContinuation<Result<Void, HeraldClientError>, Never>] in
            guard state.outcome == nil else { return [] }
            state.outcome = outcome
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume(returning: outcome) }
    }

    /// Waits for the daemon's first answer to the `sub`; `.cancelled` when the task is (the
    /// subscription itself stays).
    func ready() async -> Result<Void, HeraldClientError> {
        let slot = CancellationSlot()
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let id = readiness.withLock { state -> Int? in
                    if state.outcome != nil { return nil }
                    let id = state.nextWaiter
                    state.nextWaiter += 1
                    state.waiters[id] = continuation
                    return id
                }
                guard let id else {
                    continuation.resume(returning: readiness.withLock { $0.outcome } ?? .failure(.closed))
                    return
                }
                slot.arm { [self] in
                    let waiter = readiness.withLock { $0.waiters.removeValue(forKey: id) }
                    waiter?.resume(returning: .failure(.cancelled))
                }
            }
        } onCancel: {
            slot.cancel()
        }
    }
}

/// A subscription's token: `cancel()` (or releasing the token) unsubscribes.
///
/// The token holds the client weakly, so keeping tokens in a long-lived object does not keep
/// the client alive, and the client never holds tokens, so there is no cycle.
public final class Subscription: Sendable, Hashable {
    /// The subscription's name on this connection.
    public let name: String
    /// The channel or pattern.
    public let channel: Channel
    let binding: SubscriptionBinding
    private weak let client: HeraldClient?
    private let cancelsOnDeinit: Bool

    init(binding: SubscriptionBinding, channel: Channel, client: HeraldClient, cancelsOnDeinit: Bool) {
        self.name = binding.name
        self.channel = channel
        self.binding = binding
        self.client = client
        self.cancelsOnDeinit = cancelsOnDeinit
    }

    deinit {
        if cancelsOnDeinit { cancel() }
    }

    /// Unsubscribes now: no handler call starts after this returns.
    public func cancel() {
        if let client {
            client.unbind(binding)
        } else {
            binding.cancel()
        }
    }

    /// Why the subscription ended (removed channel, `max` reached, cancelled, …); nil while live.
    public var endReason: SubscriptionEnd? { binding.endReason }

    /// Waits until the subscription ends and returns why.
    ///
    /// For an instance channel this is how a holder learns the owner removed it:
    /// `if case .removed = try await token.ended() { closeTheView() }`.
    /// - Returns: the reason; at once if it already ended.
    /// - Throws: `.cancelled` when the waiting task is cancelled (the subscription stays).
    public func ended() async throws(HeraldClientError) -> SubscriptionEnd { try await binding.ended().get() }

    /// Whether the subscription is still live (not cancelled, not finished by `max`).
    public var isActive: Bool {
        guard let client, !binding.isCancelled else { return false }
        return client.isBound(binding)
    }

    /// Waits until the daemon confirmed the subscription (events published after this reach it).
    /// - Throws: the daemon's error (e.g. `bad_channel`, `forbidden`), `.closed`, or
    ///   `.cancelled` when the waiting task is cancelled (the subscription stays).
    public func ready() async throws(HeraldClientError) {
        try await binding.ready().get()
    }

    /// Whether the last catch-up reached every event: after a `sub` with
    /// ``SubscriptionOptions/since`` or a restore after a reconnect, the daemon's `recovered`.
    ///
    /// nil when no catch-up was asked for; `false` when events may be missing (the daemon
    /// restarted, its history was too short, or it keeps none): the error handler also got
    /// ``HeraldClientError/historyLost(subscription:channel:)``, and the app should re-fetch.
    public var recovered: Bool? { binding.recovered }

    /// Identity.
    public static func == (lhs: Subscription, rhs: Subscription) -> Bool { lhs === rhs }

    /// Identity hash.
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}
