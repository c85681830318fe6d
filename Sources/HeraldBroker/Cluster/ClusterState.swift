import HeraldWire

/// What cluster mode adds to the broker (docs/cluster.md): one queue of commands for the
/// engine, in order (`ClusterCommand`): the events this node's clients published, sent to
/// Redis in one batch per loop pass; the changes of this node's interest (patterns gaining
/// their first or losing their last local subscriber); the script calls parked requests
/// wait for; and the interest tickets every node has seen (the `sub` answers waiting for
/// them are held like durability answers, in `Retention.heldSessions`).
///
/// The broker stays pure: it fills this and the server's `ClusterEngine` drains it, talks to
/// Redis, and calls back `Broker.deliverRemote` and `Broker.interestSeen`.
public final class ClusterState {
    /// Set by the engine while it cannot reach Redis after it was ready (a failover, an
    /// outage): `lock` and `unlock` are then refused `unavailable` before anything changes,
    /// since their `ok` means every node applied them and no node can hear them now.
    public var isDown = false
    /// One event published here, for the batch.
    public struct Event: Sendable {
        /// The concrete channel.
        public let channel: [UInt8]
        /// The publishing connection's global id.
        public let from: ConnectionID
        /// The raw JSON of `data`, when the event has one.
        public let data: [UInt8]?
        /// The token of the publisher's receipt (`pub` with a `rid`), or 0.
        public let receipt: Int
        /// A `req`'s reply token (32 hex digits, the first 8 naming this node), or nil.
        public var replyToken: [UInt8]? = nil
        /// A `req`'s `timeout_ms`: how long delivering nodes keep who may reply.
        public var requestTimeoutMs: Int = 0
        /// Whether the event goes into the channel's history (`req`s and `$sys` events do
        /// not, as on one node).
        public var keepsHistory: Bool = true
        /// When set, not an event but a message for that node's channel (`data` holds it,
        /// `ClusterNodeMessage`): a reply on its way to the requester's node, or an answer.
        public var directNode: Int? = nil
        /// With `directNode`: a signal message (`ClusterSignalMessage`, in `data`), published
        /// as it is.
        public var isSignalMessage = false
        /// For a signal offer: its signal id and attempt, so the sender's node hears when no
        /// node took the message (the handler's node is gone: it counts as `pass`).
        public var offer: OfferRef? = nil
        /// With auth, the publishing user's name: the user a new history stream of the
        /// channel is charged to (`user_limits.history_bytes`, docs/cluster.md).
        public var user: String? = nil
        /// A `pub`'s `id` (idempotent publish): the event is a run of its own, and the
        /// shard's script drops it when its channel saw the id within `dedup_window_ms`.
        public var dedupID: [UInt8]? = nil
    }

    /// Names one offer of a signal (`ClusterSignalMessage.offer`).
    public struct OfferRef: Sendable, Equatable {
        /// The signal's global id.
        public let id: Int
        /// Which offer of that signal.
        public let attempt: Int
    }

    /// A change of this node's interest.
    public struct InterestChange: Sendable, Equatable {
        /// The pattern (channel or wildcard pattern).
        public let pattern: [UInt8]
        /// Whether the node now has a subscriber on it (false: its last one left).
        public let added: Bool
        /// The ticket of the barrier a new interest holds answers behind (0 for removals
        /// and for registering again after Redis came back).
        public let ticket: Int
        /// For a queue group's membership on this node: the group's name (nil: plain
        /// interest in `pattern`).
        public var group: [UInt8]? = nil
        /// For a group: how many members it has on this node now (`added` false: 0).
        public var members: Int = 0
        /// For a change of locks (`pattern` then empty): the owner, a local connection.
        public var lockOwner: ConnectionID? = nil
        /// For a change of locks: the records (`ClusterLockRecord`) taken (`added`) or
        /// released; empty with `added` false: every lock of the owner goes (it left).
        public var lockRecords: [[UInt8]] = []
        /// For a change of signal handlers (`pattern` then empty): the owner, a local
        /// connection.
        public var handlerOwner: ConnectionID? = nil
        /// For a change of handlers: `A` added, `R` removed, `X` all of the owner's gone,
        /// `S` the owner's set exactly (registering again).
        public var handlerOp: UInt8 = 0
        /// For `A` and `S`: `name`, `pattern`, `score` (0: Redis gives one) per handler; for
        /// `R`: the names.
        public var handlerRecords: [[UInt8]] = []

        /// A change of `pattern`.
        public init(pattern: [UInt8], added: Bool, ticket: Int) {
            self.pattern = pattern
            self.added = added
            self.ticket = ticket
        }

        /// A change of the queue group `group` on `pattern`: `members` on this node now.
        public init(pattern: [UInt8], group: [UInt8], members: Int, ticket: Int) {
            self.init(pattern: pattern, added: members > 0, ticket: ticket)
            self.group = group
            self.members = members
        }
    }

    /// A Lua script call that a parked request waits for (docs/cluster.md: state ops, and
    /// the catch-up of a `sub` with `current` or `since`).
    public struct ScriptCall: Sendable {
        /// Which script.
        public enum Script: String, Sendable, CaseIterable {
            /// `ClusterStateScripts.state`: one retained-state op.
            case state
            /// No script: a `PING` on the command link, so that an answer the broker made
            /// at once for a request behind pipelined state ops goes out in its turn.
            case answer
            /// `ClusterStateScripts.catchUp`: `current` values and the history after `since`.
            case catchUp
            /// `ClusterInstanceScripts.declare`: claims instance channels for an owner.
            case declare
            /// `ClusterInstanceScripts.undeclare`: removes an owner's instance channels
            /// everywhere (fire and forget: nobody waits for it).
            case undeclare
            /// `ClusterLinkScripts.link`: sets a link, refusing `conflict` and `cycle`.
            case link
            /// `ClusterLinkScripts.unlink`: removes an owner's links (a connection's `unlink`,
            /// waited for; or its departure, fire and forget).
            case unlink
            /// Not a script: asks every other node for its subscriptions (arguments: `l` and a
            /// channel for `locks {ch}`, answered `{locked, unlocked, truncated}`; or `o` and
            /// a pattern for a channel-wide `lock`/`unlock`, answered `{covered, [],
            /// truncated}`; then the asker's user name), as global ids.
            case locksQuery
            /// `ClusterLeaseScripts.lease`: grants this node part of a user's cluster-wide
            /// `user_limits` figure (arguments: node, kind, user, limit, wanted), answered
            /// `{granted, total}`.
            case lease
            /// `ClusterLeaseScripts.unlease`: gives part of a grant back (fire and forget).
            case unlease
            /// `ClusterRateScripts.share`: this node's connections per rate-limited user
            /// (arguments: node, then `USER COUNT` pairs); the engine hands the totals to
            /// `Broker.setRateShare` (`Broker+Rates`).
            case rateShare
            /// `ClusterPresenceScripts.record`: this node's roster members, for their leaves
            /// when it dies (arguments: node, then `+ FIELD JSON` / `- FIELD`; fire and forget).
            case presenceRecord
        }
        /// The key of the waiting request (`ClusterState.waiting`).
        public let token: Int
        /// The script to run.
        public let script: Script
        /// The channel whose interested nodes the engine passes as the script's targets
        /// (nil: the script publishes nothing).
        public let channel: [UInt8]?
        /// The script's arguments after the prefix and the targets.
        public internal(set) var arguments: [[UInt8]]
        /// The interest ticket every node must have acknowledged before the call runs (0:
        /// none): a catch-up reads history only once every node routes the channel here.
        public let afterTicket: Int
    }

    /// A request whose session is parked until its script answers.
    struct Waiting {
        let session: Session
        let op: Op
        let opRaw: [UInt8]?
        let rid: [UInt8]?
        /// The subscription a catch-up is for.
        let subscription: Subscription?
        /// What the catch-up asked for.
        let catchUp: CatchUp?
        /// The instance channel a `declare` claims, or the channel a `link`/`unlink` is for.
        var channel: [UInt8]? = nil
        /// The parent a `link` sets.
        var parent: [UInt8]? = nil
        /// How many locks an `unlock` released (its answer waits for the other nodes' lists).
        var released = 0
        /// Whether nothing may go on behind this call (`Session.exclusiveClusterCalls`).
        var exclusive = false
        /// For an `answer` call: the answer, made when the request was handled, written
        /// when the call comes back, in its turn among the session's other answers.
        var answer: [UInt8]? = nil
        /// For a `lease` call: the grant it asks for, and the request to run again once the
        /// grant is known (`Broker+ClusterLeases`).
        var lease: UserLeases.Key? = nil
        var retry: LeaseRetry? = nil
        /// For a gathered `presence` or `clients`: the page it asked for.
        var pageQuestion: PageQuestion? = nil
    }

    /// The page a gathered `presence` or `clients` asked for (`count_only` for `presence`).
    typealias PageQuestion = (after: Int, limit: Int, countOnly: Bool)

    /// A publisher waiting for its event's `seq`.
    struct Receipt {
        let session: Session
        let rid: [UInt8]
        /// For a `reply` to another node's request: that node, whose answer it waits for.
        var awaitedNode: Int? = nil
    }

    /// Whether state ops may be pipelined behind each other (`Broker.mayPipeline`): only
    /// when every state answer comes back in the order sent, i.e. not with
    /// `cluster.wait_replicas` (a write's answer waits for its `WAIT`, a read's does not).
    public var pipelinesStateOps = true

    /// What this node was granted of its users' cluster-wide `user_limits` figures.
    var leases = UserLeases()

    /// This node's index in the cluster (client ids are `index << 32 | n`): its incarnation,
    /// new when the node was declared down while it ran (`Broker.resetClusterNode`).
    public internal(set) var nodeIndex: Int
    /// This node's name (`cluster.node`), in `info` and `stats`.
    public let nodeName: String
    /// Events, interest changes and script calls, in the order queued since the engine last
    /// took them: one client's `pub` and state ops keep their order.
    public private(set) var commands: [ClusterCommand] = []
    /// The bytes of the queued events' channels and data: with several loops, what the other loops
    /// queued while the engine's loop was busy, which the server bounds for backpressure
    /// (`cluster.max_outstanding_bytes`) before it becomes one oversized `publish` call.
    public private(set) var outboxBytes = 0
    /// Where in `commands` the last interest change is (a group's count updates it).
    private var lastInterest: Int?
    /// Where in `commands` the last event or call is (a departing owner's `undeclare` grows
    /// it while nothing but interest changes came after it).
    private var lastOther: Int?
    /// The last barrier ticket handed out, and the highest every node has acknowledged.
    private(set) var lastTicket = 0
    /// The latest registration ticket of each entry this node added (`pendingTicket`);
    /// entries whose ticket is done are dropped once there are many.
    private var registering: [[UInt8]: Int] = [:]
    public private(set) var ticketsDone = 0
    var receipts: [Int: Receipt] = [:]
    private var nextReceipt = 0
    /// Parked requests by token.
    var waiting: [Int: Waiting] = [:]
    /// Every signal handler of the cluster (`Broker+ClusterSignals`).
    let handlers = ClusterHandlerTable()
    /// Offers of other nodes' signals to this node's handlers, by signal id.
    var remoteOffers: [Int: RemoteOffer] = [:]
    /// The remote offers each local connection holds now.
    var remoteOffersHeld: [ConnectionID: Set<Int>] = [:]
    /// Channels being resumed after a Redis outage (`Broker+ClusterResume`): where this node
    /// was (the last `seq` delivered, the subscription serial then) and the live events held
    /// until the missed ones are read.
    var resuming: [[UInt8]: (seq: Int, serial: Int, held: [(RemoteEvent, ClusterRouting)])] = [:]
    /// After a resume, per channel, the highest `seq` it delivered from history: a live event
    /// at or below it already went out (until the first above it, or `floorsExpireAt`).
    var resumeFloors: [[UInt8]: Int] = [:]
    /// Whether either is in use (the delivery fast path checks this one flag).
    var isResuming: Bool { !resuming.isEmpty || !resumeFloors.isEmpty }
    /// Per owner, the index in `commands` of its handler removal still taking names.
    private var openHandlerRemovals: [ConnectionID: Int] = [:]
    private var nextToken = 0
    /// Requests from any node delivered here with auth on: who may reply (`DeliveredRequests`).
    var delivered = DeliveredRequests()

    /// Cluster mode for the node with this index and name.
    public init(nodeIndex: Int, nodeName: String = "") {
        self.nodeIndex = nodeIndex
        self.nodeName = nodeName
    }

    /// Whether the engine has something to send.
    public var hasWork: Bool { !commands.isEmpty }

    /// How many commands wait for the engine. It only grows between two takes, so the
    /// server compares it around a read to tell whether that read's lines queued cluster
    /// work (the connections to pause under backpressure).
    public var queuedWork: Int { commands.count }

    /// Hands the queued commands to the engine, in order.
    public func takeCommands() -> [ClusterCommand] {
        defer {
            commands.removeAll(keepingCapacity: true)
            forgetQueuePlaces()
        }
        return commands
    }

    /// Takes the queued commands `pick` chooses (what it makes of each), in order, and
    /// leaves the others queued in theirs (tests play the engine one kind at a time).
    func take<Item>(_ pick: (ClusterCommand) -> Item?) -> [Item] {
        let taken = commands.compactMap(pick)
        commands.removeAll { pick($0) != nil }
        forgetQueuePlaces()
        return taken
    }

    /// The queue was emptied (or its indices changed): nothing queued can grow any more.
    private func forgetQueuePlaces() {
        outboxBytes = commands.reduce(0) { bytes, command in
            guard case .event(let event) = command else { return bytes }
            return bytes + event.channel.count + (event.data?.count ?? 0)
        }
        lastInterest = nil
        lastOther = nil
        openHandlerRemovals.removeAll()
    }

    /// Queues a script call for a parked request. - Returns: its token.
    func call(_ script: ScriptCall.Script, channel: [UInt8]?, arguments: [[UInt8]], waiting request: Waiting,
              afterTicket: Int = 0) -> Int {
        nextToken += 1
        waiting[nextToken] = request
        request.session.openClusterTokens.append(nextToken)
        append(.call(ScriptCall(token: nextToken, script: script, channel: channel, arguments: arguments,
                                afterTicket: afterTicket)))
        return nextToken
    }

    /// Queues a script call nobody waits for (token 0: its answer is dropped).
    func send(_ script: ScriptCall.Script, arguments: [[UInt8]]) {
        append(.call(ScriptCall(token: 0, script: script, channel: nil, arguments: arguments, afterTicket: 0)))
    }

    /// Queues a command, noting where the last of its kind is.
    private func append(_ command: ClusterCommand) {
        switch command {
        case .interest: lastInterest = commands.count
        case .event(let event):
            lastOther = commands.count
            outboxBytes += event.channel.count + (event.data?.count ?? 0)
        case .call: lastOther = commands.count
        }
        commands.append(command)
    }

    /// The most channels one `undeclare` call carries (one script call per pass and owner
    /// for a teardown, never one per channel, and never a script that holds Redis long).
    public static let undeclareBatch = 1_000

    /// Queues the removal of `name` (owned by `owner`, a local connection) from the
    /// cluster: its ownership, state and history go in Redis and every other node tells its
    /// exact subscribers. Removals of one owner and reason in one pass share a call, unless
    /// an event or another call came between them (interest changes do not count: the
    /// engine sends them first).
    func undeclare(_ name: [UInt8], owner: ConnectionID, reason: [UInt8]) {
        if let last = lastOther, undeclareGrows(at: last, owner: owner, reason: reason) {
            commands[last].updateCall { $0.arguments.append(name) }
            return
        }
        send(.undeclare, arguments: [Array(String(nodeIndex).utf8), Array(String(owner).utf8), reason, name])
    }

    /// Whether the command at `index` is an `undeclare` of `owner` for `reason` with room
    /// for another name.
    private func undeclareGrows(at index: Int, owner: ConnectionID, reason: [UInt8]) -> Bool {
        guard let call = commands[index].scriptCall, call.script == .undeclare else { return false }
        return call.arguments.count < 3 + Self.undeclareBatch
            && call.arguments[1] == Array(String(owner).utf8) && call.arguments[2] == reason
    }

    /// Queues the removal of an owner's links from the cluster (it left, or lost the right),
    /// at most `undeclareBatch` per call; nobody waits for it.
    func unlinkAll(_ names: [[UInt8]], owner: ConnectionID) {
        var start = 0
        while start < names.count {
            let end = min(start + Self.undeclareBatch, names.count)
            send(.unlink, arguments: [Array(String(nodeIndex).utf8), Array(String(owner).utf8)] + names[start..<end])
            start = end
        }
    }

    /// The latest interest ticket handed out (what a catch-up waits for).
    var latestTicket: Int { lastTicket }

    /// Subscriptions whose `current`/`since` catch-up is being read from Redis, with the
    /// live events that arrived for them meanwhile (sent after the catch-up, without the
    /// ones it already covered).
    var catchingUp: [(subscription: Subscription, events: [RemoteEvent])] = []

    /// After a catch-up, per channel, the subscriptions it covered up to a `seq`: a live
    /// event at or below it may still arrive (it came down the message link, the catch-up's
    /// answer down the command link, in either order) and must not reach them twice. An
    /// entry goes at the channel's first live event above it (the link delivers a channel's
    /// events in `seq` order), when its subscription ended, or once `floorLifetimeMs` passed
    /// (a late event trails its answer by a link's delivery time, milliseconds): a quiet
    /// channel must not keep every remote event off the fast path (`Broker+ClusterCatchUp`).
    var floors: [[UInt8]: [(subscription: Subscription, seq: Int)]] = [:]
    /// When the floors are swept next (monotonic ms), and how long one lives.
    var floorsExpireAt = 0
    static let floorLifetimeMs = 5_000

    /// Stops buffering for `subscription`. - Returns: what was buffered.
    func endCatchUp(_ subscription: Subscription) -> [RemoteEvent] {
        guard let at = catchingUp.firstIndex(where: { $0.subscription === subscription }) else { return [] }
        return catchingUp.remove(at: at).events
    }

    /// Queues an event (or a message for another node) to publish.
    func enqueue(_ event: Event) {
        append(.event(event))
    }

    /// Records a new interest and returns the ticket its answers wait for.
    func added(_ pattern: [UInt8]) -> Int {
        lastTicket += 1
        append(.interest(InterestChange(pattern: pattern, added: true, ticket: lastTicket)))
        registering[pattern] = lastTicket
        return lastTicket
    }

    /// The ticket of `entry`'s registration (a pattern, or `PATTERN GROUP`) when the other
    /// nodes have not all seen it yet, else 0: a second subscriber's `ok` waits for it too
    /// (the first one's registration is what routes the events to this node).
    func pendingTicket(for entry: [UInt8]) -> Int {
        guard let ticket = registering[entry] else { return 0 }
        return ticket > ticketsDone ? ticket : 0
    }

    /// Records that this node's last subscriber on `pattern` left.
    func removed(_ pattern: [UInt8]) {
        append(.interest(InterestChange(pattern: pattern, added: false, ticket: 0)))
    }

    /// Records a queue group's membership count on this node. The first member to join (a
    /// group new here) gets a barrier ticket; later counts and leaving members do not.
    /// - Returns: the ticket the `sub` answer waits for, or 0.
    func groupChanged(_ pattern: [UInt8], group: [UInt8], members: Int, joined: Bool) -> Int {
        var ticket = joined && members == 1 ? lastTicket + 1 : 0
        if ticket > 0 {
            lastTicket = ticket
            registering[pattern + [32] + group] = ticket
        } else if joined {
            // A later member's `ok` waits for the group's registration as the first one's does.
            ticket = pendingTicket(for: pattern + [32] + group)
            if ticket > 0 {
                append(.interest(InterestChange(pattern: pattern, group: group, members: members, ticket: 0)))
                return ticket
            }
        }
        // A connection leaving with many members of one group: one count per pass, not one
        // Redis call per member.
        if ticket == 0, let at = lastInterest, let last = commands[at].interestChange, last.ticket == 0,
           last.members > 0, last.group == group, last.pattern == pattern {
            commands[at] = .interest(InterestChange(pattern: pattern, group: group, members: members, ticket: 0))
            return 0
        }
        append(.interest(InterestChange(pattern: pattern, group: group, members: members, ticket: ticket)))
        return ticket
    }

    /// Records locks taken or released by a local connection (`records` empty with `added`
    /// false: all of them, the owner left). With `held`, a barrier ticket is handed out for
    /// the answer to wait for (every node applies the change first).
    /// - Returns: the ticket, or 0.
    func locksChanged(owner: ConnectionID, records: [[UInt8]], added: Bool, held: Bool) -> Int {
        let ticket = held ? lastTicket + 1 : 0
        if held { lastTicket = ticket }
        var change = InterestChange(pattern: [], added: added, ticket: ticket)
        change.lockOwner = owner
        change.lockRecords = records
        append(.interest(change))
        return ticket
    }

    /// Records a change of a local connection's signal handlers (`op`: `A`, `R`, `X`, `S`).
    /// With `held`, a barrier ticket is handed out for the `sub` answer to wait for. A
    /// departing connection's removals share one change per pass, `undeclareBatch` names at
    /// most. - Returns: the ticket, or 0.
    func handlersChanged(owner: ConnectionID, op: UInt8, records: [[UInt8]], held: Bool) -> Int {
        let removal = !held && op == UInt8(ascii: "R")
        // Removals join the owner's open removal, even past other interest changes queued
        // since (a departing connection's patterns interleave); any other change of the
        // owner closes it, so a name removed and registered again keeps that order.
        if removal, let open = openHandlerRemovals[owner], open < commands.count,
           (commands[open].interestChange?.handlerRecords.count ?? Self.undeclareBatch) < Self.undeclareBatch {
            commands[open].updateInterest { $0.handlerRecords += records }
            return 0
        }
        openHandlerRemovals[owner] = removal ? commands.count : nil
        let ticket = held ? lastTicket + 1 : 0
        if held { lastTicket = ticket }
        var change = InterestChange(pattern: [], added: op != UInt8(ascii: "R") && op != UInt8(ascii: "X"), ticket: ticket)
        change.handlerOwner = owner
        change.handlerOp = op
        change.handlerRecords = records
        append(.interest(change))
        return ticket
    }

    /// Queues a signal message for another node's channel.
    func sendSignalMessage(_ message: ClusterSignalMessage, to node: Int, offer: OfferRef? = nil) {
        var event = Event(channel: [], from: 0, data: message.encoded, receipt: 0)
        event.directNode = node
        event.isSignalMessage = true
        event.offer = offer
        enqueue(event)
    }

    func markDone(upTo ticket: Int) {
        ticketsDone = max(ticketsDone, ticket)
        if registering.count > 64 { registering = registering.filter { $0.value > ticketsDone } }
    }

    /// Removes a receipt to answer it. - Returns: nil when it is gone already.
    func takeReceipt(_ token: Int) -> Receipt? {
        guard let receipt = receipts.removeValue(forKey: token) else { return nil }
        receipt.session.clusterReceipts -= 1
        return receipt
    }

    func newReceipt(_ session: Session, rid: [UInt8], awaitedNode: Int? = nil) -> Int {
        session.clusterReceipts += 1
        nextReceipt += 1
        receipts[nextReceipt] = Receipt(session: session, rid: rid, awaitedNode: awaitedNode)
        return nextReceipt
    }
}

extension ClusterState.ScriptCall {
    /// A call nobody waits for (token 0: its answer is dropped), made by the engine itself.
    public init(unwaited script: Script, arguments: [[UInt8]]) {
        self.init(token: 0, script: script, channel: nil, arguments: arguments, afterTicket: 0)
    }
}
