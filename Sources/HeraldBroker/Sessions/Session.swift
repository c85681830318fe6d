import HeraldWire

/// Identifies a connection for the broker; the server assigns them, never reusing one.
public typealias ConnectionID = Int

/// The broker's view of one connection: identity, options, subscriptions, and the bytes
/// waiting to be written to it.
///
/// The broker appends frames to `outbound`; the server takes them (see `takeOutbound`) and
/// reports how many bytes are still in flight, so the broker can bound the total.
public final class Session {
    /// The server's id for the connection.
    public let id: ConnectionID
    /// The protocol's client id, e.g. `c7`.
    public let clientID: [UInt8]
    /// The client id as a JSON string, for `from` fields.
    let quotedClientID: [UInt8]
    /// The peer's address as text without the port (`127.0.0.1`, `::1`, `unix`), set by the server right after `connect`.
    public var peer: [UInt8] = []
    /// The display name given in `hello`.
    public internal(set) var name: [UInt8]?
    /// False when the client asked not to receive its own publications.
    public internal(set) var echo = true
    /// What it said of itself at `hello` (`info`, raw JSON), shown in presence.
    public internal(set) var info: [UInt8]?
    /// `info.instance`, when a string: a reconnect with the same user and instance within
    /// `presence_grace_ms` is no leave and no join.
    public internal(set) var instance: [UInt8]?
    /// Set when the connection goes (closed by the daemon or by its peer), before its
    /// subscriptions end: their presence leaves may wait out `presence_grace_ms`.
    var isEnding = false
    /// How it reached the daemon (`tcp`, `tls`, `unix`, `ws`, `wss`), for `clients`.
    public var transport: [UInt8] = Array("tcp".utf8)
    /// When it connected (broker clock, ms).
    let connectedAt: Int
    /// Events its subscriptions lost to the slow-consumer `drop` policy, for `clients`.
    var droppedEvents = 0
    /// Frames not yet handed to the socket. Reading or changing it first moves the staged
    /// events in (`Session+Staging.swift`), so every frame keeps its place.
    public internal(set) var outbound: [UInt8] {
        get {
            if stagedCount > 0 { moveStaged() }
            if spanBytes > 0 { materializeSpans() }
            return queued
        }
        _modify {
            if stagedCount > 0 { moveStaged() }
            if spanBytes > 0 { materializeSpans() }
            yield &queued
        }
    }
    /// What `outbound` holds, without the staged events.
    var queued: [UInt8] = []
    /// Small event frames appended since the last move (`appendEvent`): a block of
    /// `stagingCapacity` bytes allocated on the first one, freed with the session.
    var staging: UnsafeMutableRawPointer?
    /// How much of `staging` is in use.
    var stagedCount = 0
    /// Frames queued by reference to the broker's `FrameArena`, after `queued` and the
    /// staged block (`Session+Spans.swift`): the closed spans, then `openSpan`, the one new
    /// frames merge into; none unless `sharesFrames`.
    var spans: [FrameSpan] = []
    var openSpan = FrameSpan(start: 0, count: 0)
    /// Bytes of the spans, `openSpan` included; 0 when there are none.
    var spanBytes = 0
    /// The arena the spans point into (kept once set), and its address, compared per span.
    var arena: FrameArena?
    var arenaID: UnsafeMutableRawPointer?
    /// Set by the server for a connection that writes spans itself (a plain socket on a
    /// one-loop daemon): only then do deliveries queue frames by reference.
    public var sharesFrames = false
    /// `max_pending`: how large `queued` may grow when staged events move in.
    var outboundLimit = Int.max
    /// Bytes handed to the socket but not yet written; the server keeps this current.
    public var inFlight = 0
    /// Set once the connection is to close after its pending bytes are flushed.
    public internal(set) var closeAfterFlush = false
    /// Set once the peer shut its sending side (`Broker.endOfInput`): nothing more will be
    /// read; the connection closes once what it asked for is answered (`Broker+HalfClose`).
    public internal(set) var inputEnded = false
    /// When the close was asked for, so a peer that never reads cannot hold it open.
    public internal(set) var closeRequestedAt = 0
    /// Subscriptions by name.
    var subscriptions = SessionSubscriptions()
    /// Bytes of the `args` of its subscriptions (`max_conn_args_bytes`).
    var argsBytes = 0
    /// Names the daemon assigned so far (`s1`, `s2`, …).
    var nextAssignedName = 1
    /// Malformed frames in a row.
    var errorRun = 0
    /// Last time (ms) anything arrived from the peer.
    var lastHeard: Int
    /// Set by the server while it does not read the peer (cluster backpressure): whatever
    /// the peer sends waits in the socket, so its silence proves nothing and heartbeats
    /// leave it alone; the server calls `Broker.heard` when it reads again.
    public var isReadPaused = false
    /// Whether a heartbeat ping is waiting for the peer.
    var pingOutstanding = false
    /// The channel this session last published to: a steady publisher skips the lookup.
    var lastChannel: Channel?
    /// Set once the broker released what the connection owned (locks, instance channels,
    /// requests), so closing and disconnecting release it exactly once.
    var hasLeft = false
    /// Set by `disconnect`: the server has forgotten the connection, so bytes still listed
    /// for it (answers released after it left) no longer count as pending output.
    var isDisconnected = false
    /// Signals this connection sent that are still under way (`max_signals`).
    var signalsInFlight = 0
    /// `pendingBytes` as last added to the broker's running total (`Broker+FairShare.swift`).
    var accountedPending = 0
    /// Set while the session sits in the broker's dirty list.
    var isDirty = false
    /// Set when pacing a publisher for this subscriber ran out of time (it does not read):
    /// it paces nobody until its queue was written down to half of `pace_pending`
    /// (`Broker+Pacing`).
    public internal(set) var isPacingExempt = false
    /// Answers held until their state records are durable (see `Session+Barriers.swift`).
    var barriers: [OutputBarrier] = []
    /// Auth (`Broker+Auth.swift`): whether the connection may use more than hello and ping.
    public internal(set) var isAuthenticated = true
    /// The user its token belongs to; nil when auth is off (then nothing is restricted).
    public internal(set) var user: AuthUser? {
        didSet { hasUser = user != nil }
    }
    /// `user != nil`, kept as a flag: reading the optional `AuthUser` copies the whole struct
    /// (a `memcpy` per request), and every op asks whether there is one.
    private(set) var hasUser = false
    /// The token it presented, kept to check it again when SIGHUP changes the users.
    var presentedToken: [UInt8]?
    /// A `hello` parked until its token is verified off the loop (`PendingVerification`).
    var pendingVerification: PendingVerification?
    /// Whether the server already took `pendingVerification` to run it.
    var verificationTaken = false
    /// Whether the parked `hello` waits for another connection's verification of the same
    /// token instead of one of its own.
    var followsVerification = false
    /// The user account its connection is charged to (`UserLimits.connections`).
    var account: UserAccount?
    /// Its user's rate limits (`Broker+Rates`); nil when the user has none.
    var rate: UserRate? {
        didSet { hasRate = rate != nil }
    }
    /// `rate != nil`, kept as a flag: tested for every line.
    private(set) var hasRate = false
    /// Whether its user has rate limits: read by the server for every line. A getter, not
    /// a public stored property: the server's module is built with dynamic exclusivity
    /// checks, and its direct read of a stored property cost one `swift_beginAccess` per
    /// line there (85 instructions, +5% of a 1→1 delivery; callgrind). The getter runs in
    /// this module, which is built without them.
    public var isRateLimited: Bool { hasRate }

    init(id: ConnectionID, now: Int) {
        self.id = id
        var client: [UInt8] = [UInt8(ascii: "c")]
        client.appendInt(id)
        self.clientID = client
        var quoted: [UInt8] = []
        quoted.appendJSONString(client)
        self.quotedClientID = quoted
        self.lastHeard = now
        self.connectedAt = now
    }

    deinit {
        staging?.deallocate()
        if spanBytes > 0 { arena?.release() }
    }

    /// Whether a `hello` waits for its token to be verified: the server must hold the
    /// connection's further lines until `Broker.completeVerification` answered it.
    public var awaitsVerification: Bool { pendingVerification != nil }

    /// Requests waiting for the cluster's Redis (state ops, a `sub`'s catch-up, a lock
    /// listing): the server holds the connection's further lines until their answers are
    /// queued, so answers keep the order of requests, except state ops behind state ops
    /// (`Broker.mayPipeline`), whose answers come back in order through the one command link.
    public internal(set) var clusterCalls = 0

    /// Of `clusterCalls`, those behind which nothing may go on (a catch-up, a lock listing,
    /// a `declare` or `link`: answered off the command link's order, or changing what later
    /// lines see).
    var exclusiveClusterCalls = 0
    /// The tokens of this session's cluster calls not answered yet, in the order it asked
    /// (`ClusterState.call`), and the answers that came before an earlier one's: with
    /// several Redis shards, calls on different shards answer out of order, and the answers
    /// go out in the order of the requests (`Broker.clusterCallAnswered`).
    var openClusterTokens: [Int] = []
    var earlyClusterAnswers: [Int: ClusterValue] = [:]

    /// Whether a request waits for the cluster's Redis.
    public var awaitsCluster: Bool { clusterCalls > 0 }

    /// Receipts (`pub`, `req`, `reply` with `rid` in cluster mode) still to come from Redis:
    /// a half-closed connection stays open for them.
    var clusterReceipts = 0

    /// Whether the server must hold the connection's further lines (a `hello` being
    /// verified, or a request waiting for the cluster).
    public var isParked: Bool { pendingVerification != nil || awaitsCluster }

    /// Whether nothing is queued, staged events included; unlike `outbound.isEmpty` it moves
    /// nothing and copies no reference (the server asks on every flush).
    public var hasNoOutbound: Bool { stagedCount == 0 && queued.isEmpty && spanBytes == 0 }

    /// The queue's capacity (what it pins), without moving staged events.
    public var outboundCapacity: Int { queued.capacity }

    /// Bytes queued or in flight: what `max_pending` bounds.
    public var pendingBytes: Int { queued.count + stagedCount + spanBytes + inFlight }

    /// Hands the queued bytes to the caller, leaving `spare` (emptied) as the new queue.
    ///
    /// Swapping two buffers keeps their capacity, so steady traffic allocates nothing. The new
    /// queue starts at least as large as the one taken (up to `outboundDoublingLimit`):
    /// otherwise both buffers climbed the doubling ladder from 256 B one after the other,
    /// each step copying what was queued. At 1→1000 over 2,000 publishes that growth was a
    /// third of the instructions (callgrind); reserving an empty buffer copies nothing.
    /// - Parameter spare: an empty buffer to queue into next; receives the queued bytes.
    public func takeOutbound(into spare: inout [UInt8]) {
        spare.removeAll(keepingCapacity: true)
        guard barriers.isEmpty else { return takeReleasable(into: &spare) }
        if stagedCount > 0 { moveStaged() }
        if spanBytes > 0 { materializeSpans() }
        swap(&queued, &spare)
        let taken = Swift.min(spare.capacity, Session.outboundDoublingLimit)
        if queued.capacity < taken { queued.reserveCapacity(taken) }
    }

    /// Frees a queue that grew large once, so one burst does not pin memory forever.
    public func shrinkOutboundIfIdle(above limit: Int) {
        if hasNoOutbound && queued.capacity > limit { queued = [] }
    }
}
