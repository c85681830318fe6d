import Dispatch

/// An answer the client is waiting for, keyed by `rid`.
///
/// `complete` is called exactly once: whoever removes the entry from the table (the answer,
/// the timeout sweep, a disconnect, `close()`) calls it, and removal happens under the lock.
struct PendingAnswer {
    let deadline: UInt64?
    let complete: @Sendable (Result<ServerFrame, HeraldClientError>) -> Void
}

/// One subscription as the client remembers it, to deliver to it and to restore it.
struct SubscriptionRecord {
    let binding: SubscriptionBinding
    let channel: Channel
    let isPattern: Bool
    let group: String?
    /// Deliveries left of `max`; restored as `max` after a reconnect.
    var remaining: Int?
    let args: RawJSON?
    /// Creation order, so restores happen in the order the app subscribed.
    let order: Int
    /// True once the daemon answered this incarnation's `sub` with `ok`. Events for a name whose
    /// `sub` is still unanswered belong to a previous subscription under that name (the daemon
    /// sends the `ok` before any event of the new one), so they are skipped.
    var acked = false
    /// True once any incarnation was confirmed: only then can a reconnect have lost events.
    var everAcked = false
    /// The last live `seq` seen, for `since` after a reconnect (concrete channels only).
    var lastSeq: Int?
    /// Set for a signal handler (`sub` with `handle:true`): called with each offer.
    var signalHandler: (@Sendable (IncomingSignal) -> Void)?
    /// Ask for `current:true` (with every restore too, so retained values are re-fetched).
    var current = false
    /// The caller's `since` (`SubscriptionOptions.since`), sent until the `sub` is first confirmed.
    var requestedSince: Int?
    /// Its owner reads the state again after each restore (`SubscriptionBinding.onAcknowledged`),
    /// so the restore asks no `since` and reports no lost history.
    var refetchesOnRestore = false
}

/// A lock this connection holds, restored after a reconnect.
///
/// Global ids of this client's own subscriptions (`c7/menu`) are kept by name, because the
/// client id changes with every connection: after a reconnect they are sent as `c9/menu`.
struct LockRecord: Hashable {
    /// One entry of `subs`.
    enum Target: Hashable {
        /// One of this client's subscriptions, by name.
        case own(String)
        /// Another connection's subscription, by global id, sent as given.
        case other(String)
    }

    let channel: String?
    let subs: [Target]?
    let sub: String?

    /// A lock by channel (and optionally global ids), splitting off ids with `client`'s prefix.
    init(channel: String, subscriptions: [String]?, client: String?) {
        self.channel = channel
        self.sub = nil
        let prefix = client.map { $0 + "/" }
        self.subs = subscriptions?.map { id in
            if let prefix, id.hasPrefix(prefix) { return .own(String(id.dropFirst(prefix.count))) }
            return .other(id)
        }
    }

    /// A lock on one of this client's subscriptions by name.
    init(subscription name: String) {
        channel = nil
        subs = nil
        sub = name
    }

    /// The `subs` field for a connection whose id is `client`.
    func subIDs(client: String) -> [String]? {
        subs?.map { target in
            switch target {
            case .own(let name): return client + "/" + name
            case .other(let id): return id
            }
        }
    }
}

/// What the daemon said in `info`.
public struct ServerInfo: Sendable, Equatable {
    /// The daemon's name, `heraldd`.
    public let server: String
    /// The daemon's version.
    public let version: String
    /// This connection's id, e.g. `c7`.
    public let client: String
    /// The life of the daemon's counters; a new one means `since` cannot help.
    public let epoch: String
    /// Seconds of silence after which the daemon pings (0: off).
    public let heartbeatMs: Int
    /// The longest line the daemon accepts.
    public let maxLine: Int
    /// In cluster mode, the name of the node this connection is on; nil for a daemon alone.
    public var node: String? = nil
}

/// Everything mutable that callers and the I/O thread share, behind one `Mutex`.
///
/// One lock, and no user code runs under it: handlers, continuations and observers are
/// collected under the lock and called after it is released.
struct ClientState {
    var outbound: [UInt8] = []
    /// True from the `hello` answer until the connection is lost: new frames may be sent.
    var linkUp = false
    var closed = false
    var threadRunning = false
    var everConnected = false
    var nextRid = 1
    var pending: [Int: PendingAnswer] = [:]
    /// `rid`s whose callers were cancelled: their answers are dropped silently (a late `req`
    /// `timeout` is not an error anyone needs to hear about). Cleared on disconnect.
    var abandoned: Set<Int> = []
    var subscriptions: [String: SubscriptionRecord] = [:]
    var nextOrder = 0
    var nextBindingID = 1
    var connection: ConnectionState = .disconnected(.notStarted)
    var observers: [Int: AsyncStream<ConnectionState>.Continuation] = [:]
    var nextObserver = 0
    var info: ServerInfo?
    /// The epoch of the previous connection, to decide whether `since` can help.
    var previousEpoch: String?
    var errorHandler: (@Sendable (HeraldClientError) -> Void)?
    /// Callers of `connect()` waiting for the link, by id (a cancelled one removes itself).
    var connectWaiters: [Int: CheckedContinuation<Result<Void, HeraldClientError>, Never>] = [:]
    var nextConnectWaiter = 0
    /// `connect(waitsForConnectivity: true)` is waiting: failed first attempts are retried
    /// under the reconnect policy instead of ending `connect()`.
    var retryFirstConnect = false
    /// Locks held, in the order taken (restored after a reconnect).
    var locks: [LockRecord] = []
    /// Instance channels this client owns, in the order declared (declared again after a reconnect).
    var declared: [String] = []
    /// Links this client made, in order (made again after a reconnect).
    var links: [LinkRecord] = []
    /// Signals this client sent that are still under way.
    var signals = SignalTable()
    /// Counts the connections set up (`hello` answered): a restore retry scheduled on one does
    /// nothing on a later one, which restores everything itself.
    var generation = 0
    /// Publishes kept until answered (``OfflinePublishing``).
    var outbox = Outbox()
    /// Bytes the I/O thread still had to write at its last pass (for `maxOutboundBytes`).
    var writerBacklog = 0
    /// Callers of `waitForOutboundRoom()`, by id.
    var roomWaiters: [Int: CheckedContinuation<Result<Void, HeraldClientError>, Never>] = [:]
    var nextRoomWaiter = 0
    /// Owners of declared channels (``HeraldClient/declare(_:owner:onError:)``), by channel.
    var channelOwners: [String: WeakOwner] = [:]
    /// Owners of links, by linked channel.
    var linkOwners: [String: WeakOwner] = [:]
    /// The `onError` of declared channels and links whose owner gave one (by their key).
    var ownerErrorHandlers: [RestoreKey: @Sendable (HeraldClientError) -> Void] = [:]
    /// What this connection's restore still waits for; `.restored` once it is empty.
    var unrestored: Set<RestoreKey> = []

    /// Appends a frame; returns true when the I/O thread must be woken (queue was empty).
    mutating func enqueue(_ line: [UInt8]) -> Bool {
        let wasEmpty = outbound.isEmpty
        outbound.append(contentsOf: line)
        return wasEmpty
    }

    /// Allocates a `rid` and registers its completion.
    mutating func register(timeout: Double?, _ complete: @escaping @Sendable (Result<ServerFrame, HeraldClientError>) -> Void) -> Int {
        let rid = nextRid
        nextRid += 1
        let deadline = timeout.map { DispatchTime.now().uptimeNanoseconds + UInt64(max(0, $0) * 1e9) }
        pending[rid] = PendingAnswer(deadline: deadline, complete: complete)
        return rid
    }

    /// Bytes queued for the daemon: not yet taken by the I/O thread, or taken and not written.
    var outboundBytes: Int { outbound.count + writerBacklog }

    /// Marks `key` restored (answered, or refused for good); when it was the last one on a
    /// connected link, the state becomes `.restored`.
    /// - Returns: the observers to tell of `.restored` (empty when nothing changed).
    mutating func settleRestore(_ key: RestoreKey) -> [AsyncStream<ConnectionState>.Continuation] {
        guard unrestored.remove(key) != nil else { return [] }
        return restoredIfDone()
    }

    /// `.restored` when nothing waits any more and the link is up but not yet restored.
    /// - Returns: the observers to tell.
    mutating func restoredIfDone() -> [AsyncStream<ConnectionState>.Continuation] {
        guard unrestored.isEmpty, linkUp, connection == .connected else { return [] }
        return transition(to: .restored)
    }

    /// Records a connection state change; returns the observers to tell.
    mutating func transition(to state: ConnectionState) -> [AsyncStream<ConnectionState>.Continuation] {
        guard connection != state else { return [] }
        connection = state
        return Array(observers.values)
    }
}
