import Dispatch
import Observation
import Synchronization

/// A local mirror of one channel's retained value, kept current by the daemon's state events.
///
/// Made by ``HeraldClient/remoteValue(_:at:)``, which returns once the mirror holds the
/// channel's state, so `current` is meaningful at once. Under the hood: a subscription with
/// `current:true` (restored after a reconnect, so the value is re-fetched then too), and a
/// `get` as a barrier. Every change is applied only if its `rev` is newer than the mirror's,
/// so replays, the `current` snapshot and the `get` answer can arrive in any order. When the
/// daemon says events on the channel will never arrive (a `gap`), the mirror reads the value
/// again with `get`.
///
/// Observers run on the client's `.ordered` queue, in `rev` order, never under a lock; a
/// cancelled observation is checked again right before each call.
///
/// It is `Observable`: reading ``current`` inside `withObservationTracking` (or a SwiftUI-style
/// view) registers it, and every accepted change fires it, on the thread that applied the
/// change, after `current` already holds the new value. Observation coalesces changes; use
/// ``observe(alertNow:_:)`` to see each one.
public final class RemoteValue<Value: Codable & Sendable>: Sendable, Observable {
    /// The channel mirrored.
    public let channel: Channel
    private weak let client: HeraldClient?
    /// The client's `.ordered` queue; calculated values built on this one observe on it too.
    let queue: DispatchQueue
    private let mirror = Mutex<Mirror>(Mirror())
    private let registrar = ObservationRegistrar()

    private struct Mirror {
        var value: Value?
        var rev = 0
        var decodingFailure: HeraldClientError?
        var observers: [Int: @Sendable (Value?, Int) -> Void] = [:]
        var nextObserver = 0
        var subscription: Subscription?
    }

    init(channel: Channel, client: HeraldClient, queue: DispatchQueue) {
        self.channel = channel
        self.client = client
        self.queue = queue
    }

    /// The last known value (nil: the channel holds none) and its `rev` (0: never set).
    public var current: Retained<Value> {
        registrar.access(self, keyPath: \.current)
        return mirror.withLock { Retained(value: $0.value, rev: $0.rev) }
    }

    /// The newest change that did not decode as `Value`, when it is newer than ``current``;
    /// nil once a newer change decoded (or none failed). A failure is not "unset": `current`
    /// keeps the last value that decoded (and its rev), and the error handler hears of it too.
    public var decodingFailure: HeraldClientError? {
        registrar.access(self, keyPath: \.decodingFailure)
        return mirror.withLock { $0.decodingFailure }
    }

    /// Calls `handler` with every change of the value, and with the current value first when
    /// `alertNow` (so a view can render from one code path).
    /// - Parameters:
    ///   - alertNow: also call at once (on the queue) with the current value and rev.
    ///   - handler: gets the value (nil when deleted or never set) and its rev.
    /// - Returns: the observation; releasing it or calling `cancel()` stops the calls. It
    ///   keeps this mirror alive.
    public func observe(alertNow: Bool = true, _ handler: @escaping @Sendable (Value?, Int) -> Void) -> Observation {
        let id = mirror.withLock { mirror -> Int in
            let id = mirror.nextObserver
            mirror.nextObserver += 1
            mirror.observers[id] = handler
            if alertNow { schedule(id: id, value: mirror.value, rev: mirror.rev) }
            return id
        }
        return Observation { [self] in _ = mirror.withLock { $0.observers.removeValue(forKey: id) } }
    }

    /// Sets the channel's value, optionally only if its `rev` is still `ifRev` (compare-and-set).
    /// - Parameters:
    ///   - value: the new value.
    ///   - ifRev: the rev the caller based the change on; nil sets unconditionally.
    /// - Returns: the new rev (the mirror holds the value at once).
    /// - Throws: `.conflict(channel:rev:)` with the channel's current rev when `ifRev` did not
    ///   match; `.closed` when the client is gone; the daemon's other refusals.
    @discardableResult
    public func set(_ value: Value, ifRev: Int? = nil) async throws(HeraldClientError) -> Int {
        guard let client else { throw .closed }
        do {
            let rev = try await client.set(value, at: channel, ifRev: ifRev)
            apply(value, rev: rev)
            return rev
        } catch .server(code: "conflict", _, _) {
            // The refusal's `rev` is not kept by the client's error path; read it now.
            let now = try await client.get(rawAt: channel).rev
            throw .conflict(channel: channel.name, rev: now)
        }
    }

    /// How many observers are registered (tests: calculated values cancel theirs).
    var observerCount: Int {
        mirror.withLock { $0.observers.count }
    }

    func attach(_ subscription: Subscription) {
        mirror.withLock { $0.subscription = subscription }
    }

    /// A state event (or `get` answer) for the channel: applied when newer.
    /// - Parameter reportFailure: false when the caller throws the failure itself.
    /// - Returns: the decoding failure, if the data is not a `Value`.
    @discardableResult
    func receive(_ data: RawJSON?, kind: String?, rev: Int?, reportFailure: Bool = true) -> HeraldClientError? {
        guard let rev else { return nil }   // a plain `pub` on the channel: not state
        if kind == "del" {
            apply(nil, rev: rev)
            return nil
        }
        if kind == "touch", alertTouched(rev: rev) { return nil }
        guard let data else { return nil }
        do throws(HeraldClientError) {
            apply(try data.decode(as: Value.self), rev: rev)
            return nil
        } catch {
            let failure = HeraldClientError.decoding(type: String(describing: Value.self), channel: channel.name, message: "\(error)")
            let recorded = mirror.withLock { mirror -> Bool in
                guard rev > mirror.rev else { return false }
                mirror.decodingFailure = failure
                return true
            }
            if recorded { registrar.withMutation(of: self, keyPath: \.decodingFailure) {} }
            if reportFailure { client?.report(failure) }
            return failure
        }
    }

    /// Takes a `get` answer: the value (nil or `null`: deleted or never set) when its rev is newer.
    /// - Parameter reportFailure: false when the caller throws the failure itself.
    /// - Returns: the decoding failure, if the value is not a `Value`.
    @discardableResult
    func take(_ snapshot: Retained<RawJSON>, reportFailure: Bool = true) -> HeraldClientError? {
        guard snapshot.rev > 0 else { return nil }
        guard let value = snapshot.value, value != .null else {
            receive(nil, kind: "del", rev: snapshot.rev)
            return nil
        }
        return receive(value, kind: "get", rev: snapshot.rev, reportFailure: reportFailure)
    }

    /// Reads the value again (`get`) after the daemon said changes were lost (`gap`); the
    /// answer is applied when newer. A failed read goes to the error handler.
    func refetch() {
        Task { [weak self] in
            guard let self, let client = self.client else { return }
            do throws(HeraldClientError) {
                take(try await client.get(rawAt: channel))
            } catch {
                client.report(error)
            }
        }
    }

    /// A `touch` at the mirror's rev: every observer is called again with the unchanged value
    /// (SwiftBinding's `alertChangeListeners`). Returns false when the touch is newer than the
    /// mirror (a change was missed), so its payload is applied like a `set`.
    private func alertTouched(rev: Int) -> Bool {
        mirror.withLock { mirror -> Bool in
            guard rev <= mirror.rev else { return false }
            if rev == mirror.rev {
                for id in mirror.observers.keys.sorted() { schedule(id: id, value: mirror.value, rev: rev) }
            }
            return true
        }
    }

    private func apply(_ value: Value?, rev: Int) {
        let changed = mirror.withLock { mirror -> Bool in
            guard rev > mirror.rev else { return false }
            mirror.value = value
            mirror.rev = rev
            mirror.decodingFailure = nil
            for id in mirror.observers.keys.sorted() { schedule(id: id, value: value, rev: rev) }
            return true
        }
        // Outside the lock: observation-tracking callbacks are user code.
        if changed { registrar.withMutation(of: self, keyPath: \.current) {} }
    }

    /// Queues one observer call (under the mirror lock, so calls keep rev order on the serial
    /// queue); the observer is looked up again when the call runs, so cancelling takes effect.
    private func schedule(id: Int, value: Value?, rev: Int) {
        queue.async { [self] in
            guard let handler = mirror.withLock({ $0.observers[id] }) else { return }
            handler(value, rev)
        }
    }
}

/// An observation of a ``RemoteValue``: `cancel()` or releasing it stops the calls.
public final class Observation: Sendable {
    private let cancelAction: Mutex<(@Sendable () -> Void)?>

    init(cancel: @escaping @Sendable () -> Void) {
        cancelAction = Mutex(cancel)
    }

    deinit { cancel() }

    /// Stops the calls; calls already queued do not run. Idempotent.
    public func cancel() {
        let action = cancelAction.withLock { action -> (@Sendable () -> Void)? in
            defer { action = nil }
            return action
        }
        action?()
    }
}

extension HeraldClient {
    /// Mirrors a channel's retained value; returns once the mirror holds the current state.
    ///
    ///     let theme = try await client.remoteValue(Theme.self, at: Channel("app", "theme"))
    ///     let watching = theme.observe { theme, rev in apply(theme) }   // called at once, then per change
    ///     try await theme.set(Theme(mode: .dark), ifRev: theme.current.rev)
    /// - Parameters:
    ///   - type: the value's type.
    ///   - channel: a concrete channel.
    /// - Returns: the mirror; releasing it unsubscribes.
    /// - Throws: `.badChannel`, `.decoding` (the channel holds a value that is not a `Value`:
    ///   distinct from an unset channel, which returns a mirror with `current.rev` 0),
    ///   `.notConnected`, `.closed`, the daemon's refusals.
    public func remoteValue<Value: Codable & Sendable>(_ type: Value.Type, at channel: Channel) async throws(HeraldClientError) -> RemoteValue<Value> {
        _ = try channel.validatedConcrete()
        let remote = RemoteValue<Value>(channel: channel, client: self, queue: orderedQueue)
        let options = SubscriptionOptions(delivery: .ordered, current: true, onGap: { [weak remote] _ in remote?.refetch() })
        let token = try subscribe(raw: channel, options: options) { [weak remote] data, metadata in
            remote?.receive(data, kind: metadata.kind, rev: metadata.rev)
        }
        remote.attach(token)
        try await token.ready()
        // A barrier: the daemon answers this after the `current` event, and with the same
        // state, so `current` is right when this returns whatever the queue's progress.
        // Held but not a `Value`: thrown here, not mistaken for "never set".
        if let failure = remote.take(try await get(rawAt: channel), reportFailure: false) { throw failure }
        return remote
    }
}
