import HeraldWire

/// The broker as a state machine: requests in, bytes for connections out.
///
/// The server feeds it request lines (`handleLine`), connection events (`connect`,
/// `disconnect`) and the time (`tick`). The broker answers by appending frames to the
/// sessions' `outbound` queues and listing those sessions as dirty (`drainDirty`); a
/// session marked `closeAfterFlush` asks the server to close it once written. It owns no
/// sockets, clocks or threads, so tests drive it directly and read the queued bytes.
public final class Broker {
    /// Tunables; may be replaced while running (SIGHUP).
    public var config: BrokerConfig {
        // With `history: 0` nothing is recorded any more, so a replay could not see the
        // events published after it (`Broker+Replay.swift`): its subscriptions go live now.
        didSet { if config.history == 0 && !replays.isEmpty { endReplaysWithoutHistory() } }
    }
    /// Cluster mode's state (docs/cluster.md); nil when the daemon runs alone. The server
    /// drains its queue; the broker's ops reach it only through `port`.
    public let cluster: ClusterState?
    /// Where every op that cluster mode does differently goes (`ClusterPort`): this node
    /// alone, or the cluster state. Called once per op, never per delivery; a `let`, so a
    /// call borrows it (a `var` would be retained and released around every call).
    let port: any ClusterPort
    /// The channel of the last cross-node event (cluster mode; runs repeat it).
    var remoteChannel: Channel?
    /// The quoted id of the last cross-node publisher (cluster mode).
    var remoteQuoted: (id: ConnectionID, quoted: [UInt8])?
    /// Counters for `stats`.
    public var stats = BrokerStats()
    /// The last subscriber an event put past `pace_pending` since the server last looked
    /// (`Broker+Pacing`).
    public internal(set) var pacingSession: Session?
    /// Cluster mode: the node's Redis link figures (`cluster_ready`, `cluster_redis_rtt_us`),
    /// set by the server once per heartbeat scan and carried by the `stats` answer, so a
    /// client (the console) sees each node's link; empty on a single node.
    public var clusterLinkFigures: [StatsFigure] = []
    /// The wall clock in ms, for `ping`/`pong` payloads; injected so tests are repeatable.
    let wallClock: @Sendable () -> Int
    /// Sessions by connection id: the broker's owning reference to each, from `connect` to
    /// `disconnect`. Subscriptions refer to their session unretained, and a fan-out borrows
    /// them, so this table is what keeps a subscriber's session alive during a delivery.
    var sessions: [ConnectionID: Session] = [:]
    /// Fan-outs under way (nested ones count): while it is above 0, sessions are borrowed
    /// and `disconnect`, the only place a session leaves `sessions`, must not run.
    var fanOutDepth = 0
    /// Known channels by name.
    var channels = NameTable<Channel>()
    /// Every subscription, by pattern.
    let index = SubscriptionIndex()
    /// The request scanner, reused for every line.
    let scanner = RequestScanner()
    /// Sessions with new outbound bytes or a close request since the last drain.
    private var dirty: [Session] = []
    /// `since` replays still being sent, oldest first (`Broker+Replay.swift`).
    var replays: [ReplayCursor] = []
    /// Whether the last `continueReplays` queued anything: the loop must run another pass
    /// even if no socket event wakes it (the bytes may have been written at once).
    var replayQueued = false
    /// Creation order counter for subscriptions.
    var nextSerial = 0
    /// When the broker started (monotonic ms), for `uptime_ms`.
    let startedAt: Int
    /// The request being handled: its op and raw `rid`, echoed in answers.
    var current = RequestContext()
    /// The shared parts of the event being fanned out: `,"seq":S,"from":"C"` then
    /// `,"data":D}\n`, split at `eventSplit`.
    let eventShared = FrameScratch()
    var eventSplit = 0
    /// Where `,"from":"C"` sits in `eventShared`: compact subscriptions' frames leave it out.
    var eventFromStart = 0
    var eventFromEnd = 0
    /// Frames written once for the subscribers that share a prefix, queued by reference
    /// (`SharedFrame`, `Session+Spans.swift`).
    let frameArenas = FrameArenaPool()
    /// A queue-group member's frame prefix, rebuilt per delivery in reused storage (a group's
    /// member changes per event, so it has no cached prefix in `Channel.prefixArena`).
    var groupPrefix: [UInt8] = []

    // Event control (issue 4): each concern's state lives in its own type and file.
    /// Every lock held (`Broker+Locks.swift`).
    let locks = LockTable()
    /// Instance channels and their owners (`Broker+Instances.swift`).
    let instances = InstanceChannels()
    /// Requests waiting for a reply (`Broker+RequestReply.swift`).
    var requests = PendingRequests()
    /// Every timer of the broker: request timeouts (`DeadlineQueue.swift`).
    var deadlines = DeadlineQueue()
    /// Signals under way, by number.
    var signals: [Int: PendingSignal] = [:]
    var nextSignalID = 0
    /// Signals under way by sender, and offers held by handler connection, so a departing
    /// connection costs its own signals, not all of them (`Broker+Signals.swift`).
    var signalsBySender: [ConnectionID: Set<Int>] = [:]
    var offersHeld: [ConnectionID: Set<Int>] = [:]
    /// Signals under way by their sender's `rid`, for `cancel` (`Broker+Cancel.swift`).
    var signalsByRid = OperationsByRid()
    /// Per handler connection, ids of finished signals it was offered (late `handled`s).
    var finishedOffers: [ConnectionID: [Int]] = [:]
    /// Channels whose next level for signals was overridden with `link`.
    var links: [[UInt8]: ChannelLink] = [:]
    /// Channel records of the daemon's own `$…` channels (not counted by `max_channels`).
    var reservedChannelCount = 0
    /// The latest time the broker was told, for work that happens without a clock (leaving).
    var lastNow = 0
    /// `pub` ids seen within `dedup_window_ms` (idempotent publish).
    var dedup = DedupTable()
    /// Every connection's id in order, so `clients` pages without sorting.
    var sessionOrder = SortedIDs()
    /// Subscriptions on `$presence.…` (`Broker+Presence`): while none exists, a join or a
    /// leave on a channel without a roster costs this one check.
    var presenceWatchers = 0
    /// The rosters of the channels someone asked presence of.
    var presenceRosters = NameTable<PresenceRoster>()
    /// Channels in count mode whose count changed since it was last told.
    var presenceCountDue: Set<[UInt8]> = []
    /// Channels holding members that wait out their grace.
    var presenceGraceChannels: Set<[UInt8]> = []
    /// Other nodes' `$presence` patterns and the nodes holding each (cluster mode).
    var remotePresencePatterns: [[UInt8]: Set<Int>] = [:]
    /// Join and leave events told per channel in `presenceSecond` (the budget).
    var presenceEventsThisSecond: [[UInt8]: Int] = [:]
    var presenceSecond = 0
    /// When counts were last told (once a second at most).
    var lastPresenceCounts = Int.min / 2
    /// A request is being run again after its `lease` call came back (`Broker+ClusterLeases`):
    /// a grant still too small is the cluster-wide limit, not another call.
    var retryingLease = false
    /// Where reply tokens come from: a CSPRNG unless a test injects a seeded source.
    let randomWord: () -> UInt64
    /// The daemon's own session (`c0`, named `heraldd`), the publisher of `$sys` events.
    let systemSession: Session
    /// `$sys` events waiting for the current operation to end (`Broker+SystemEvents.swift`).
    var pendingSystemEvents: [SystemEvent] = []
    /// Set while `flushSystemEvents` runs, so events it causes join its loop.
    var isFlushingSystemEvents = false
    /// Retained values and lists; replaced once at start by `restore(_:)`.
    public internal(set) var store = StateStore()
    /// Records to persist, held answers and history accounting (`Broker+Journal.swift`).
    var retention = Retention()
    /// Names `channels` lists, in byte order (`Broker+Directory.swift`).
    var directory = SortedNames()
    /// Links each connection made, for release and `max_links` (`Broker+Links.swift`).
    var linksByOwner: [ConnectionID: Set<[UInt8]>] = [:]
    /// Queued plus in-flight output over every session, as last accounted (`max_pending_total`).
    var pendingTotal = 0
    /// Where the channel-record sweep goes on from (`sweepChannelRecords`).
    var sweepCursor: [UInt8]?
    /// Teardown waiting for later loop passes, each read from its head (`Broker+Teardown.swift`).
    var deferredRemovals: [DeferredRemoval] = []
    var removalHead = 0
    var deferredLocks: [DetachedLocks] = []
    /// Departed connections' links still in the table, oldest departure first: owner,
    /// channels, how many were looked at (`Broker+Teardown`).
    var deferredLinkDrops: [(owner: ConnectionID, channels: [[UInt8]], next: Int)] = []
    /// The owners in `deferredLinkDrops` (their links may be taken over).
    var departedLinkOwners: Set<ConnectionID> = []
    /// Ended subscriptions still in the index, a batch per connection, oldest first
    /// (`Broker+Teardown`).
    var deferredUnindexing: [DeferredUnindexing] = []
    /// How much one listing or sweep may look at; only tests and the fuzz harness change it.
    public var budgets = ScanBudgets()
    /// Bytes of the `args` of every subscription (`max_args_total`).
    var argsBytesTotal = 0
    /// Per-user accounts for `UserLimits`, by user name (auth on only).
    var accounts: [String: UserAccount] = [:]
    /// Rate limits per user with any (`Broker+Rates`), kept for their `/metrics` counter.
    var rates: [String: UserRate] = [:]
    /// When the rate-limited users' connections were last told to Redis (cluster mode).
    var lastRateShare = Int.min / 2
    /// Which account holds each channel's retained state (`user_limits.retained_bytes`).
    var retainedHolders = RetainedHolders()
    /// Failed hellos, verified tokens, connections still to authenticate (`Broker+Auth`).
    var auth: AuthenticationState

    /// Creates a broker.
    /// - Parameters:
    ///   - config: the tunables.
    ///   - now: the monotonic clock in ms at start.
    ///   - wallClock: the wall clock in ms since 1970, for ping payloads.
    ///   - randomWord: random 64-bit words for reply tokens; the default is the system
    ///     CSPRNG, and only tests should pass anything else (tokens must be unguessable).
    ///   - cluster: cluster mode's state, for a node of a cluster; nil alone.
    public init(config: BrokerConfig, now: Int, wallClock: @escaping @Sendable () -> Int,
                randomWord: @escaping () -> UInt64 = Broker.secureRandomWord, cluster: ClusterState? = nil) {
        self.cluster = cluster
        self.port = cluster ?? SingleNodePort()
        self.config = config
        self.startedAt = now
        self.wallClock = wallClock
        self.randomWord = randomWord
        self.auth = AuthenticationState(failureCapacity: config.auth.failureTableCapacity, randomWord: randomWord)
        self.systemSession = Session(id: 0, now: now)
        systemSession.name = Array("heraldd".utf8)
    }

    /// Registers a new connection and queues its `info` frame.
    /// - Returns: the session the server keeps for the connection.
    public func connect(id: ConnectionID, now: Int) -> Session {
        let session = Session(id: id, now: now)
        session.outboundLimit = config.maxPending
        sessions[id] = session
        sessionOrder.insert(id)
        stats.totalConnections += 1
        if sessions.count > config.maxConnections {
            refuseOverLimit(session, now: now)
            return session
        }
        write(session) { out in
            out.appendRaw(#"{"info":{"server":"heraldd","version":"#)
            out.appendJSONString(config.version)
            out.appendRaw(#","proto":1,"client":"#)
            out.append(contentsOf: session.quotedClientID)
            out.appendRaw(#","epoch":"#)
            out.appendJSONString(config.epoch)
            out.appendRaw(#","max_line":"#)
            out.appendInt(config.maxLine)
            out.appendRaw(config.auth.isEnabled ? #","auth":true,"heartbeat_ms":"# : #","auth":false,"heartbeat_ms":"#)
            out.appendInt(config.heartbeatMs)
            if let node = port.node {
                out.appendRaw(#","node":"#)
                out.appendJSONString(Array(node.utf8))
            }
            out.appendRaw("}}\n")
        }
        beginAuthentication(session, now: now)
        queueClientEvent(session, connected: true)
        flushSystemEvents()
        return session
    }

    /// Forgets a closed connection and everything it held.
    ///
    /// The edge calls it between requests; never during a fan-out, whose deliveries borrow
    /// sessions without retaining them (a session closed mid-fan-out is only marked).
    public func disconnect(_ session: Session) {
        precondition(fanOutDepth == 0, "disconnect during a fan-out: its sessions are borrowed")
        session.isEnding = true
        removeAllSubscriptions(of: session)
        leave(session)
        forgetPending(of: session)
        session.isDisconnected = true
        sessions[session.id] = nil
        sessionOrder.remove(session.id)
        flushSystemEvents()
    }

    /// Number of live sessions.
    public var connectionCount: Int { sessions.count }

    /// Notes that bytes arrived from the peer, which proves it alive.
    public func heard(from session: Session, now: Int) {
        session.lastHeard = now
        session.pingOutstanding = false
    }

    /// Hands every session with pending output or a close request to `body`, once each.
    public func drainDirty(_ body: (Session) -> Void) {
        flushSystemEvents()
        // A session can be listed after it left (an answer held for durability released
        // later); it was taken out of the total then and must not come back into it.
        for session in dirty where !session.isDisconnected { accountPending(of: session) }
        enforcePendingTotal()
        while !dirty.isEmpty {
            let batch = dirty
            dirty.removeAll(keepingCapacity: true)
            for session in batch {
                session.isDirty = false
                body(session)
            }
        }
    }

    /// Whether any session waits to be flushed.
    public var hasDirty: Bool { !dirty.isEmpty }

    /// Lists a session for the next flush.
    func markDirty(_ session: Session) {
        if session.isDirty { return }
        session.isDirty = true
        dirty.append(session)
    }

    /// Appends a non-event frame (an answer, an error, a ping) to a session's queue.
    ///
    /// Answers cannot be dropped, so a peer whose queue passes `maxPending` with them
    /// (it sends requests and never reads) is disconnected under either policy.
    func write(_ session: Session, _ build: (inout [UInt8]) -> Void) {
        if session.closeAfterFlush { return }
        build(&session.outbound)
        markDirty(session)
        if session.pendingBytes > config.maxPending { disconnectSlowConsumer(session) }
    }

    /// Asks the server to close a session after its queued bytes, removing its interest now.
    func close(_ session: Session, now: Int) {
        guard !session.closeAfterFlush else { return }
        session.closeAfterFlush = true
        session.closeRequestedAt = now
        session.isEnding = true
        removeAllSubscriptions(of: session)
        leave(session)
        markDirty(session)
    }

    /// Drops a session that fell behind: queued events go, an error frame is queued, and
    /// the connection closes once that is written.
    /// - Parameter cap: which bound it passed, for the message (`max_pending` unless a
    ///   daemon-wide or per-user share cut it).
    func disconnectSlowConsumer(_ session: Session, cap: SlowConsumerCap = .perConnection) {
        guard !session.closeAfterFlush else { return }
        stats.slowConsumers += 1
        queueSlowConsumerEvent(session)
        session.outbound.removeAll()
        session.barriers.removeAll()
        switch cap {
        case .perConnection:
            session.outbound.appendRaw(#"{"error":"slow_consumer","message":"outbound queue passed max_pending ("#)
            session.outbound.appendInt(config.maxPending)
        case .daemon:
            session.outbound.appendRaw(#"{"error":"slow_consumer","message":"this connection held the most output when the daemon's passed max_pending_total ("#)
            session.outbound.appendInt(config.maxPendingTotal)
        case .user(let limit):
            session.outbound.appendRaw(#"{"error":"slow_consumer","message":"this user's output passed user_limits.pending_bytes ("#)
            session.outbound.appendInt(limit)
        }
        session.outbound.appendRaw(#" bytes); closing"}"#)
        session.outbound.append(UInt8(ascii: "\n"))
        close(session, now: session.lastHeard)
    }

    /// Ends every subscription of a connection: each stops receiving at once, and what they
    /// were charged is given back in one step (the connection's `args` bytes and its user's
    /// count); leaving the index (the costly part: tries, the directory, cluster interest) is
    /// teardown in slices (`Broker+Teardown`, `deferUnindexing`).
    ///
    /// One pass over the subscriptions, not four: with 1,000,000 of them (issue 32 at 10×)
    /// each pass touching every object cost 60–160 ms (a cache miss each), and listing them,
    /// releasing their charges one by one and copying the list for the queue took 510 ms
    /// inline together.
    func removeAllSubscriptions(of session: Session) {
        guard !session.subscriptions.isEmpty else { return }
        let all = session.subscriptions.retireAll()
        session.subscriptions.removeAll()
        // They stay in the index until the teardown reaches them: the channels' cached
        // targets, which deliver to a plain subscription's session without looking at the
        // subscription (`FastTarget.plainSession`), must be rebuilt without them first.
        index.invalidateTargets()
        chargeArgs(-session.argsBytes, to: session)
        if let account = session.account {
            account.subscriptions -= all.count
            dropIfEmpty(account)
        }
        deferUnindexing(all, of: session)
    }

    /// Ends one subscription now: charges given back, out of the index; the caller removes it
    /// from its session.
    func retire(_ subscription: Subscription) {
        releaseCharges(of: subscription)
        unindex(subscription)
    }

    /// Stops deliveries to a subscription and gives back what it was charged (its user's
    /// count, its `args` bytes).
    func releaseCharges(of subscription: Subscription) {
        subscription.isActive = false
        chargeArgs(-(subscription.args?.count ?? 0), to: subscription.session)
        if let account = subscription.session.account {
            account.subscriptions -= 1
            dropIfEmpty(account)
        }
    }

    /// Takes an ended subscription out of the index, the directory and the cluster's interest.
    func unindex(_ subscription: Subscription) {
        if index.remove(subscription) {
            if !subscription.isWildcard { directoryDrop(subscription.pattern) }
        }
        presenceUnsubscribed(subscription)
        port.unsubscribed(self, subscription)
    }
}

/// The op and `rid` of the request being answered.
struct RequestContext {
    /// The op name as sent, raw JSON string bytes (with quotes), when it was a string.
    var opRaw: UnsafeRawBufferPointer?
    /// The raw `rid` JSON value, when given.
    var ridRaw: UnsafeRawBufferPointer?
    /// The request was parked behind a `lease` call (`Broker+ClusterLeases`): the error
    /// that unwound it is not answered; the request runs again when the grant is known.
    var parkedForLease = false
}

/// Which bound a slow consumer passed, named in its `slow_consumer` message.
enum SlowConsumerCap {
    /// Its own queue passed `max_pending`.
    case perConnection
    /// The daemon's total passed `max_pending_total` and it held the most.
    case daemon
    /// Its user's connections passed `user_limits.pending_bytes` (the figure).
    case user(Int)
}
