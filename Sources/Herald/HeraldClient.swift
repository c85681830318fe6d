import Dispatch
import Foundation
import Synchronization

/// A connection to `heraldd`: publish, subscribe, request, with reconnect and restore.
///
/// Threads: socket I/O runs on the client's own thread, never on the caller's. `.ordered`
/// handlers run on one serial queue per client, `.background` handlers on a concurrent queue,
/// stream consumers wherever they iterate. All shared state (subscriptions, pending answers,
/// outbound bytes) sits behind one `Mutex`, so cancelling a subscription takes effect
/// synchronously; no user code runs while it is held.
///
/// Lifetime: the I/O thread holds the client only weakly, so releasing the last reference
/// closes the connection; `close()` does it explicitly.
public final class HeraldClient: Sendable {
    /// How this client connects.
    public let configuration: ClientConfiguration
    /// The app instance this client names in its `hello` `info`: ``ClientConfiguration/instance``,
    /// or a UUID made once for this client object (the same on every reconnect).
    ///
    /// Why it matters: with the daemon's `presence_grace_ms`, a connection that comes back
    /// within the grace under the same user and the same instance takes its old place in every
    /// channel's presence, with no leave and no join for the watchers (docs/protocol.md,
    /// "Presence"). Without it every reconnect is a leave and a join.
    public let instance: String
    /// The `hello` `info`: ``ClientConfiguration/info`` with `instance` added.
    let helloInfo: RawJSON
    let state = Mutex(ClientState())
    let loop: IOLoop
    let orderedQueue: DispatchQueue
    let backgroundQueue: DispatchQueue
    /// The start of this client's idempotency `id`s (``OfflinePublishing``): 64 random bits.
    let publishIDPrefix: String
    /// Watches the device's network path (Apple: `NWPathMonitor`); nil on Linux.
    let pathMonitor: (any PathMonitor)?

    /// Creates a client for a TCP endpoint; nothing happens until `connect()`.
    /// - Parameters:
    ///   - host: daemon host name or address (default `127.0.0.1`).
    ///   - port: daemon port (default 7400).
    ///   - name: display name for `hello`.
    ///   - token: auth token for `hello`.
    public convenience init(host: String = "127.0.0.1", port: Int = 7400, name: String? = nil, token: String? = nil) {
        self.init(configuration: ClientConfiguration(endpoint: .tcp(host: host, port: port), name: name, token: token))
    }

    /// Creates a client for a Unix socket; nothing happens until `connect()`.
    /// - Parameters:
    ///   - unixPath: the daemon's socket path.
    ///   - name: display name for `hello`.
    ///   - token: auth token for `hello`.
    public convenience init(unixPath: String, name: String? = nil, token: String? = nil) {
        self.init(configuration: ClientConfiguration(endpoint: .unix(path: unixPath), name: name, token: token))
    }

    /// Creates a client from a full configuration; nothing happens until `connect()`.
    /// - Parameter configuration: endpoint, identity, reconnect policy, timeouts.
    public convenience init(configuration: ClientConfiguration) {
        self.init(configuration: configuration,
                  pathMonitor: configuration.followsNetworkPath ? makeSystemPathMonitor() : nil)
    }

    /// Creates a client whose network path news come from `pathMonitor` (tests drive the
    /// reconnect logic through a double; nil: no monitor, the backoff alone decides).
    init(configuration: ClientConfiguration, pathMonitor: (any PathMonitor)?) {
        self.configuration = configuration
        self.pathMonitor = pathMonitor
        self.publishIDPrefix = String(UInt64.random(in: .min ... .max), radix: 36) + "-"
        let instance = configuration.instance ?? UUID().uuidString.lowercased()
        self.instance = instance
        self.helloInfo = Self.makeHelloInfo(instance: instance, appInfo: configuration.info)
        self.loop = IOLoop(maxLine: configuration.maxLine)
        self.orderedQueue = DispatchQueue(label: "herald.client.ordered")
        self.backgroundQueue = DispatchQueue(label: "herald.client.background", attributes: .concurrent)
        pathMonitor?.start { [weak loop] news in loop?.pathChanged(news) }
    }

    deinit {
        pathMonitor?.cancel()
        loop.requestStop()
        let bindings = state.withLock { state in state.subscriptions.values.map(\.binding) }
        for binding in bindings { binding.end(.clientClosed) }
    }

    // MARK: Connecting

    /// Connects and waits until the daemon answered `hello`: calls work from then on, and the
    /// restore of what the client holds is sent (``ConnectionState/restored`` in
    /// ``stateUpdates()`` says when the daemon answered all of it).
    ///
    /// Subscribing before connecting is fine: the subscriptions are sent once connected. By
    /// default a failed first attempt throws and nothing retries; with `waitsForConnectivity`
    /// failed attempts are retried under `configuration.reconnect` (the same backoff as
    /// reconnects, states `.reconnecting(attempt:)`) until one succeeds, the policy's
    /// `maxAttempts` are used up, the token is refused, or the task is cancelled. Once
    /// connected, losses are always retried under the policy. Calling it while connected
    /// returns at once.
    /// - Parameter waitsForConnectivity: retry failed first attempts (an app launched before
    ///   the daemon, or offline) instead of throwing at once.
    /// - Throws: `.connectionFailed` (unreachable, refused, auth, attempts used up), `.closed`,
    ///   `.cancelled` (the task was cancelled; when no other caller waits and the client never
    ///   connected, it stops trying).
    public func connect(waitsForConnectivity: Bool = false) async throws(HeraldClientError) {
        let slot = CancellationSlot()
        let outcome: Result<Void, HeraldClientError> = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                enum Start { case done(Result<Void, HeraldClientError>), wait(Int), startThread(Int) }
                let start = state.withLock { state -> Start in
                    if state.closed { return .done(.failure(.closed)) }
                    if state.linkUp { return .done(.success(())) }
                    if waitsForConnectivity, !state.everConnected { state.retryFirstConnect = true }
                    let id = state.nextConnectWaiter
                    state.nextConnectWaiter += 1
                    state.connectWaiters[id] = continuation
                    if state.threadRunning { return .wait(id) }
                    state.threadRunning = true
                    return .startThread(id)
                }
                switch start {
                case .done(let result):
                    continuation.resume(returning: result)
                case .wait(let id):
                    slot.arm { [weak self] in self?.abandonConnect(waiter: id) }
                case .startThread(let id):
                    startThread()
                    slot.arm { [weak self] in self?.abandonConnect(waiter: id) }
                }
            }
        } onCancel: {
            slot.cancel()
        }
        try outcome.get()
    }

    /// A cancelled `connect()`: its caller gets `.cancelled` now. When nobody else waits and the
    /// client never connected, the next failed attempt ends the trying (no retry goes on
    /// behind the app's back).
    private func abandonConnect(waiter id: Int) {
        let waiter = state.withLock { state -> CheckedContinuation<Result<Void, HeraldClientError>, Never>? in
            guard let waiter = state.connectWaiters.removeValue(forKey: id) else { return nil }
            if state.connectWaiters.isEmpty, !state.everConnected { state.retryFirstConnect = false }
            return waiter
        }
        waiter?.resume(returning: .failure(.cancelled))
        loop.wake()
    }

    /// Closes the connection for good: pending answers fail with `.closed`, streams finish.
    ///
    /// Frames already handed to the client (e.g. a `post`) are still written, for up to a second.
    public func close() {
        let (kept, roomWaiters) = state.withLock { state in
            defer { state.roomWaiters = [:] }
            return (state.outbox.removeAll(), Array(state.roomWaiters.values))
        }
        let (pending, waiters, observers, bindings) = state.withLock { state in
            state.closed = true
            state.linkUp = false
            let pending = Array(state.pending.values)
            state.pending = [:]
            let waiters = Array(state.connectWaiters.values)
            state.connectWaiters = [:]
            _ = state.transition(to: .disconnected(.closedByClient))
            let observers = Array(state.observers.values)
            state.observers = [:]
            return (pending, waiters, observers, state.subscriptions.values.map(\.binding))
        }
        pathMonitor?.cancel()
        loop.requestStop()
        for entry in pending { entry.complete(.failure(.closed)) }
        for entry in kept { entry.complete(.failure(.closed)) }
        for waiter in roomWaiters { waiter.resume(returning: .failure(.closed)) }
        for waiter in waiters { waiter.resume(returning: .failure(.closed)) }
        for observer in observers {
            observer.yield(.disconnected(.closedByClient))
            observer.finish()
        }
        for binding in bindings { binding.end(.clientClosed) }
    }

    /// The current connection state.
    public var connectionState: ConnectionState { state.withLock { $0.connection } }

    /// What the daemon said in `info` on the current (or last) connection.
    public var serverInfo: ServerInfo? { state.withLock { $0.info } }

    /// A stream of connection states, starting with the current one.
    ///
    /// Each call makes a new stream for one consumer (`AsyncStream` is unicast); it keeps the
    /// newest 32 states if the consumer lags, and finishes when the client closes.
    /// - Returns: the stream.
    public func stateUpdates() -> AsyncStream<ConnectionState> {
        let (stream, continuation) = AsyncStream.makeStream(of: ConnectionState.self, bufferingPolicy: .bufferingNewest(32))
        let id = state.withLock { state -> Int? in
            continuation.yield(state.connection)
            guard !state.closed else { return nil }
            let id = state.nextObserver
            state.nextObserver += 1
            state.observers[id] = continuation
            return id
        }
        guard let id else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.observers.removeValue(forKey: id) }
        }
        return stream
    }

    /// Sets where problems go that no call can throw: undecodable events, server errors for
    /// fire-and-forget frames, subscriptions that ended or could not catch up after a reconnect.
    /// - Parameter handler: called on an arbitrary thread; must not block for long.
    public func setErrorHandler(_ handler: @escaping @Sendable (HeraldClientError) -> Void) {
        state.withLock { $0.errorHandler = handler }
    }

    /// Hands a problem to the error handler (outside the lock).
    func report(_ error: HeraldClientError) {
        let handler = state.withLock { $0.errorHandler }
        handler?(error)
    }

    /// Hands a problem to its owner's handler (a subscription's ``SubscriptionOptions/onError``,
    /// a declared channel's or link's `onError`), else to the client's error handler.
    func report(_ error: HeraldClientError, to owner: (@Sendable (HeraldClientError) -> Void)?) {
        guard let owner else {
            report(error)
            return
        }
        owner(error)
    }

    // MARK: Sending

    /// Queues a fire-and-forget frame.
    /// - Throws: `.notConnected` / `.closed` when no connection is up.
    func send(_ writer: FrameWriter) throws(HeraldClientError) {
        let line = writer.finished()
        let wake = try state.withLock { state throws(HeraldClientError) -> Bool in
            if state.closed { throw .closed }
            guard state.linkUp else { throw .notConnected }
            return state.enqueue(line)
        }
        if wake { loop.wake() }
    }

    /// Sends a frame with a fresh `rid` and waits for its answer.
    /// - Parameters:
    ///   - op: the op name.
    ///   - timeout: seconds; nil uses `configuration.requestTimeout`.
    ///   - withdrawsOnCancel: a cancelled caller also withdraws the op on the daemon
    ///     (`cancel {of}`; for `req`, whose waiter the daemon would keep until its timeout).
    ///   - fill: adds the op's fields.
    ///   - extra: adds fields that depend on the connection (e.g. the client id), read under
    ///     the same lock that enqueues the frame, so they match the connection it goes out on.
    /// - Returns: the `ok` frame.
    /// - Throws: the daemon's error, `.timeout`, `.disconnected`, `.notConnected`, `.closed`.
    func ask(_ op: String, timeout: Double? = nil, withdrawsOnCancel: Bool = false, _ fill: (inout FrameWriter) -> Void,
             extra: ((ClientState, inout FrameWriter) -> Void)? = nil) async throws(HeraldClientError) -> ServerFrame {
        let seconds = timeout ?? configuration.requestTimeout
        let slot = CancellationSlot()
        let outcome: Result<ServerFrame, HeraldClientError> = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let sent = state.withLock { state -> Result<(rid: Int, wake: Bool), HeraldClientError> in
                    if state.closed { return .failure(.closed) }
                    guard state.linkUp else { return .failure(.notConnected) }
                    let rid = state.register(timeout: seconds) { continuation.resume(returning: $0) }
                    var writer = FrameWriter(op: op, rid: rid)
                    fill(&writer)
                    extra?(state, &writer)
                    return .success((rid, state.enqueue(writer.finished())))
                }
                switch sent {
                case .failure(let error):
                    continuation.resume(returning: .failure(error))
                case .success(let (rid, wake)):
                    if wake { loop.wake() }
                    slot.arm { [weak self] in self?.abandon(rid: rid, withdrawing: withdrawsOnCancel) }
                }
            }
        } onCancel: {
            slot.cancel()
        }
        return try outcome.get()
    }

    /// The caller of `rid` was cancelled: it gets `.cancelled` now, and the daemon's answer,
    /// when it comes, is dropped without a report (`ClientState.abandoned`).
    /// - Parameters:
    ///   - rid: the cancelled call's `rid`.
    ///   - withdrawing: also ask the daemon to withdraw the op (`cancel {of: rid}`); the
    ///     `rid` is forgotten once the daemon answered that.
    func abandon(rid: Int, withdrawing: Bool = false) {
        let (entry, wake) = state.withLock { state -> (PendingAnswer?, Bool) in
            guard let entry = state.pending.removeValue(forKey: rid) else { return (nil, false) }
            state.abandoned.insert(rid)
            guard withdrawing else { return (entry, false) }
            return (entry, queueWithdrawal(of: rid, in: &state) { [weak self] in self?.forgetAbandoned(rid: rid) })
        }
        if wake { loop.wake() }
        entry?.complete(.failure(.cancelled))
    }
}
