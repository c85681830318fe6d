import CLibUV
import HeraldBroker

/// Cluster mode's edge (docs/cluster.md), on the main loop: three Redis connections (data
/// commands, pub/sub messages, and control: the liveness refresh and the reaper), the
/// routing table (`InterestTable`), and the traffic between them and the broker.
///
/// Per loop pass the worker hands over what the broker queued (`send`): each interest
/// change is one `interest` script call, all events one `publish` call. Messages for this
/// node (`{p}n:INDEX`) are events to fan out; messages on `{p}interest` are other nodes'
/// interest changes (applied and acknowledged), acknowledgements (which release held `sub`
/// answers once every live node has seen the change) and joins and leaves.
final class ClusterEngine {
    let settings: ClusterSettings
    /// This node's index: its incarnation, new after it was declared down while it ran
    /// (`ClusterEngine+Incarnation`).
    var nodeIndex: Int
    unowned let server: Server
    let commands: RedisLink
    /// The pub/sub connection (events for this node, the interest channel).
    let messages: RedisLink
    /// The control connection: the liveness refresh (which doubles as the stall probe and
    /// times the round trip) and the reaper, so that neither waits behind the script calls
    /// queued on `commands` under a flood (docs/cluster.md, "Backpressure and the control
    /// link").
    let control: RedisLink
    /// How far behind the slowest live node is in reading its events, asked on `control`
    /// while this node has work outstanding (`ClusterEngine+Backpressure`).
    let pubSubBacklog: PubSubBacklog
    /// Follows shard 0's primary under Sentinel (`cluster.sentinel`): asks the sentinels
    /// before a link reconnects, hears their failover notices, fences and moves
    /// (`PrimaryFollower`).
    let follower: PrimaryFollower?
    /// Per shard, the state writes sent since its last `WAIT` (`ClusterEngine+Replicas`).
    var openReplicaWaits: [Int: ReplicaWait] = [:]
    let table = InterestTable()
    /// Where each channel's data lives (`cluster.shards`; one shard with `cluster.redis`).
    let shardMap: ShardMap
    /// The Redis primaries after the first (`ClusterEngine+Shards`).
    let dataShards: [DataShard]
    var scripts: [String: [UInt8]] = [:]
    /// What the loaded data-path scripts were built with (`ClusterScriptParameters`).
    var scriptParameters: ClusterScriptParameters
    /// Per shard, the history bytes this node added there and has not told it yet
    /// (`ClusterEngine+History`).
    var unsettledHistoryBytes: [Int]
    /// Per shard, the channels this node kept history on since it last called `settle`
    /// there, each with the user whose publish did (auth on only), for the per-user charge
    /// (`ClusterEngine+History`).
    var unsettledHistoryChannels: [[[UInt8]: String]]
    /// A reload of the data-path scripts under way (the configuration changed).
    var isReloadingScripts = false
    /// Where the engine is on its way to readiness (`ClusterLifecycle`): its tables are the
    /// mirrored tables with a snapshot, in their order.
    var lifecycle = ClusterLifecycle(tables: [])
    /// The sync rules of the mirrored tables: held changes, the version seen (`MirrorSync`).
    var mirror = MirrorSync<MirrorChange>()
    /// Releases waiting for the data shards, and the changes queued behind them
    /// (`ClusterEngine+Fence`).
    var fence = ShardFence<FencedChange>()
    /// The mirrored tables, in the order their snapshots are read (interest, locks, links,
    /// handlers) and their own rows registered again (`registerAgain`).
    private(set) var mirroredTables: [any MirroredTable] = []
    /// Whether the node serves the cluster (every snapshot read).
    var isReady: Bool { lifecycle.isReady }
    /// The run whose scripts are loaded while the first readiness waits for the data shards
    /// (`scriptsLoaded`), and when the engine started.
    var awaitingShards: Int?
    let startedAt = uv_hrtime()
    /// `link`/`unlink` replies waiting for every live node to apply their version.
    var heldReplies: [(version: Int, since: UInt64, call: ClusterState.ScriptCall, reply: RedisReply)] = []
    /// Instance channel removals that could not reach Redis, sent again once it is back
    /// (`ClusterEngine+Instances`).
    var undeclaresToRetry: [ClusterState.ScriptCall] = []
    /// When the reaper may run again (`uv_hrtime`): after an outage, not before the other
    /// nodes had `node_timeout_ms` to refresh their liveness keys.
    private var reapAfter: UInt64 = 0
    /// Nodes whose `d`/`l` message is being checked with Redis (`confirmGone`).
    var goneChecks: Set<Int> = []
    /// What the broker queued before this node was first ready (and, while Redis is away,
    /// the interest removals), in order, sent when it is.
    private var queued: [ClusterCommand] = []
    /// Catch-up calls waiting for an interest ticket (`ClusterState.ScriptCall.afterTicket`).
    var deferredCalls: [ClusterState.ScriptCall] = []
    /// The highest interest ticket whose held answers were released.
    var releasedTicket = 0
    /// Held `sub` answers: the broker's ticket, the interest version once Redis gave it, when.
    var barriers: [(ticket: Int, version: Int?, since: UInt64)] = []
    /// Whether the broker was told Redis is unreachable (`markDown`).
    var isDownForLocks = false
    /// The highest interest version each live node acknowledged.
    var acknowledged: [Int: Int] = [:]
    /// `locks {ch}` queries waiting for the other nodes' lists (`ClusterEngine+LockQueries`).
    var lockQueries: [Int: LockQuery] = [:]
    var nextLockQuery = 0
    /// The lowest version every live node (this one included) acknowledged.
    var minimumAcknowledged: Int { acknowledged.values.min() ?? 0 }
    /// The last liveness refresh's round trip to Redis, in µs (the monitor's figure).
    var redisRoundTripUs = 0
    /// When the liveness refresh now awaiting its reply was sent (`ClusterEngine+Stall`).
    var refreshSentAt: UInt64?
    /// The interest version this node would have acknowledged while its liveness was in
    /// doubt (`sendAcknowledgement`): sent when the doubt clears, dropped at a reset.
    var heldAcknowledgement: Int?
    /// Indexes confirmed gone: their late messages are ignored (`GoneNodes`).
    var goneNodes = GoneNodes()
    /// Fail-stop and the liveness gate (`ClusterEngine+Incarnation`).
    var incarnation = IncarnationState()
    /// Nodes whose liveness key the reaper found older than two refresh periods: a held
    /// answer does not wait for them (`releaseBarriers`).
    var staleNodes: Set<Int> = []
    private let timer = UnsafeMutablePointer<uv_timer_t>.allocate(capacity: 1)
    /// Fires at the liveness deadline (`ClusterEngine+Incarnation.armDeadline`).
    let deadlineTimer = UnsafeMutablePointer<uv_timer_t>.allocate(capacity: 1)

    /// How long a held `sub` answer waits for nodes that do not acknowledge (then they count
    /// as gone; issue 15 gives node failures their own detection).
    static let barrierTimeoutNs: UInt64 = 2_000_000_000

    var prefix: String { settings.keyPrefix }
    var ownChannel: [UInt8] { Array((prefix + "n:" + String(nodeIndex)).utf8) }
    private var interestChannel: [UInt8] { Array((prefix + "interest").utf8) }

    init(settings: ClusterSettings, nodeIndex: Int, server: Server, loop: UnsafeMutablePointer<uv_loop_t>) {
        self.settings = settings
        self.nodeIndex = nodeIndex
        self.server = server
        scriptParameters = ClusterScriptParameters(prefix: settings.keyPrefix, config: server.config,
                                                   shards: settings.shardCount)
        let commands = RedisLink(host: settings.redisHost, port: settings.redisPort, loop: loop)
        let messages = RedisLink(host: settings.redisHost, port: settings.redisPort, loop: loop)
        let control = RedisLink(host: settings.redisHost, port: settings.redisPort, loop: loop)
        self.commands = commands
        self.messages = messages
        self.control = control
        pubSubBacklog = PubSubBacklog(link: control, prefix: settings.keyPrefix, loop: loop)
        shardMap = ShardMap(count: settings.shardCount)
        unsettledHistoryBytes = Array(repeating: 0, count: settings.shardCount)
        unsettledHistoryChannels = Array(repeating: [:], count: settings.shardCount)
        let logger = server.logger
        dataShards = settings.otherShards.enumerated().map { DataShard(index: $0.offset + 1, shard: $0.element, logger: logger, loop: loop) }
        for link in [commands, messages, control] { link.credentials = settings.redisCredentials }
        follower = settings.sentinel.map { sentinel in
            PrimaryFollower(sentinel, name: "primary", commands: commands, messages: messages, links: [commands, messages, control],
                            credentials: settings.redisCredentials, logger: logger, loop: loop)
        }
        acknowledged[nodeIndex] = 0
        incarnation.registered(at: uv_hrtime())
        uv_timer_init(loop, timer)
        timer.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        uv_timer_init(loop, deadlineTimer)
        deadlineTimer.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        mirroredTables = [InterestMirror(self, .interest), LockMirror(self, .locks), InstanceOwnerMirror(self, .instanceOwners),
                          LinkMirror(self, .links), HandlerMirror(self, .handlers)]
        lifecycle = ClusterLifecycle(tables: mirroredTables.filter { $0.snapshotScript != nil }.map(\.tag))
    }

    /// Connects the three links and starts the liveness refresh.
    func start() {
        publishLiveness()
        commands.onConnect = { [unowned self] in loadScripts() }
        commands.onErrorReply = { [unowned self] text in refusedAsDead(text) }
        commands.onDisconnect = { [unowned self] reason in lost(reason) }
        messages.onConnect = { [unowned self] in
            lifecycle.subscriptionRestarted()
            flushFence()
            mirror.subscriptionRestarted()
            // Named, so that the other nodes find its backlog in Redis's client list.
            messages.send([Array("CLIENT".utf8), Array("SETNAME".utf8), PubSubBacklog.name(prefix: prefix, node: nodeIndex)]) { _ in }
            messages.subscribe([ownChannel, interestChannel]) { [unowned self] reply in received(reply) }
        }
        messages.onDisconnect = { [unowned self] reason in lost(reason) }
        // The control link carries nothing that readiness depends on: losing it alone costs
        // only the refreshes, which go on `commands` meanwhile (`livenessLink`).
        commands.start()
        messages.start()
        control.start()
        startShards()
        startSentinelWatch()
        startBackpressure()
        let period = UInt64(min(1_000, settings.nodeTimeoutMs / 3))
        uv_timer_start(timer, { timer in
            guard let data = timer?.pointee.data else { return }
            Unmanaged<ClusterEngine>.fromOpaque(data).takeUnretainedValue().everyPeriod()
        }, period, period)
    }

    /// Cluster figures for `/metrics` and `/varz` (docs/operations.md, "Running a cluster"):
    /// whether the node is ready, the live nodes it counts (itself included), the last
    /// Redis round trip (the liveness refresh on the control link), the cluster ops under
    /// way (commands awaiting Redis, events and calls queued until ready, held answers,
    /// removals to send again), and backpressure: the commands and bytes outstanding on the
    /// command link, and the connections not read now because of them.
    func monitorFigures() -> [StatsFigure] {
        let pending = commands.inFlight + queued.count + deferredCalls.count
            + barriers.count + undeclaresToRetry.count
        return [
            StatsFigure("cluster_ready", isReady ? 1 : 0),
            StatsFigure("cluster_nodes", acknowledged.count),
            StatsFigure("cluster_redis_rtt_us", redisRoundTripUs),
            StatsFigure("cluster_pending_ops", pending),
            StatsFigure("cluster_outstanding_ops", commands.inFlight),
            StatsFigure("cluster_outstanding_bytes", commands.outstandingBytes),
            StatsFigure("cluster_paused_connections", server.clusterBackpressure?.pausedConnections ?? 0),
            StatsFigure("cluster_node_resets", incarnation.resets),
            StatsFigure("cluster_shards", shardMap.count),
            StatsFigure("cluster_shards_serving", (isReady ? 1 : 0) + dataShards.filter(\.isReady).count),
        ]
    }

    /// The settings with the Redis primary the command link uses now (for leaving).
    var currentSettings: ClusterSettings {
        var current = settings
        current.redisHost = commands.host
        current.redisPort = commands.port
        return current
    }

    /// Closes the three links and the timer (the loop is stopping).
    func close() {
        commands.close()
        messages.close()
        control.close()
        for shard in dataShards { shard.close() }
        pubSubBacklog.close()
        follower?.close()
        uv_timer_stop(timer)
        uv_close(UnsafeMutableRawPointer(timer).assumingMemoryBound(to: uv_handle_t.self)) { $0?.deallocate() }
        uv_timer_stop(deadlineTimer)
        uv_close(UnsafeMutableRawPointer(deadlineTimer).assumingMemoryBound(to: uv_handle_t.self)) { $0?.deallocate() }
    }

    /// What the broker queued in one pass, in order: the interest changes first (a
    /// subscriber's churn never splits the pass's `publish` batch), then the events and
    /// script calls in their order, each run of consecutive events as one `publish` call.
    func send(_ pass: [ClusterCommand]) {
        if isReady && isDownForLocks { markDown(false) }
        guard isReady else {
            if lifecycle.wasReady { refuseWhileDown(pass) } else { queued += pass }
            return
        }
        if mustHold(pass) { return }
        for case .interest(let change) in pass { sendInterest(change) }
        var run: [ClusterState.Event] = []
        run.reserveCapacity(pass.count)
        for command in pass {
            switch command {
            case .event(let event):
                run.append(event)
            case .call(let call):
                if !run.isEmpty { publish(run) }
                run.removeAll(keepingCapacity: true)
                sendCall(call)
            case .interest:
                continue
            }
        }
        if !run.isEmpty { publish(run) }
        waitForReplicas()
        // The pass's batch leaves now, not when the loop next polls (docs/architecture.md,
        // "The Redis write path"): one pipelined batch per shard.
        commands.flush()
        flushShards()
    }

    // MARK: - Publishing

    /// One `publish` call for a run of events. Events are grouped into runs (docs/cluster.md,
    /// `ClusterRecord`): the events of one channel that share the history flag, in the order
    /// channels first appear (each channel's events keep their order), so the script does
    /// one `HINCRBY` and one history entry per run. An event that matches queue groups is a
    /// run of its own (the script picks a node per group for it).
    private func publish(_ batch: [ClusterState.Event]) {
        let events = routeDirect(batch)
        guard !events.isEmpty else { return }
        guard shardMap.count > 1 else { return publish(events, shard: 0) }
        // Several shards: each channel's events go to its shard, in their order there.
        var byShard: [[RoutedEvent]] = Array(repeating: [], count: shardMap.count)
        var last: (channel: [UInt8], shard: Int)?
        for routed in events {
            let channel = routed.event.channel
            let shard: Int
            if let last, last.channel == channel { shard = last.shard } else { shard = self.shard(of: channel) }
            last = (channel, shard)
            byShard[shard].append(routed)
        }
        for (shard, routed) in byShard.enumerated() where !routed.isEmpty { publish(routed, shard: shard) }
    }

    /// One `publish` call on `shard` for events of its channels.
    private func publish(_ events: [RoutedEvent], shard: Int) {
        var runOf: [[UInt8]: Int] = [:]
        var runs: [(first: Int, members: [Int], records: [UInt8])] = []
        for (position, routed) in events.enumerated() {
            let event = routed.event
            let key = event.keepsHistory ? event.channel : event.channel + [0]
            let run: Int
            if !routed.groups.isEmpty || event.dedupID != nil {
                run = runs.count
                runs.append((position, [], []))
            } else if let last = runs.indices.last, events[runs[last].first].groups.isEmpty,
                      events[runs[last].first].event.dedupID == nil,
                      events[runs[last].first].event.channel == event.channel,
                      events[runs[last].first].event.keepsHistory == event.keepsHistory {
                run = last
            } else if let known = runOf[key], events[runs[known].first].event.dedupID == nil {
                run = known
            } else {
                run = runs.count
                runOf[key] = run
                runs.append((position, [], []))
            }
            runs[run].members.append(position)
            ClusterRecord.append(from: event.from, channel: event.channel, data: event.data, replyToken: event.replyToken,
                                 timeoutMs: event.requestTimeoutMs, to: &runs[run].records)
        }
        // A lone plain run (the common call) goes to the lean script, which answers its last
        // `seq` alone (`ClusterScripts.publishOne`).
        let lone = runs.count == 1 && events[runs[0].first].groups.isEmpty && events[runs[0].first].nodes.count <= 1
            && events[runs[0].first].event.keepsHistory && events[runs[0].first].event.dedupID == nil
        var arguments: [[UInt8]] = [Array("EVALSHA".utf8), scripts[lone ? "publishOne" : "publish"] ?? [], Array("0".utf8)]
        arguments.reserveCapacity(arguments.count + 4 * runs.count)
        let keepsHistory = scriptParameters.history > 0
        for run in runs {
            let first = events[run.first]
            arguments.append(first.event.channel)
            arguments.append(Array(String(run.members.count).utf8))
            arguments.append(ClusterRecord.encodeTargets(first.nodes, groups: first.groups, kept: first.event.keepsHistory,
                                                         dedupID: first.event.dedupID))
            if first.event.keepsHistory && keepsHistory {
                addHistoryBytes(run.records.count + 40 * run.members.count, channel: first.event.channel,
                                user: run.members.lazy.compactMap { events[$0].event.user }.first)
            }
            arguments.append(run.records)
        }
        let members = runs.map(\.members)
        let loneTargets = lone ? events[runs[0].first].nodes.count : nil
        let list = events.map(\.event)
        let finish: (RedisReply, String?) -> Void = { [unowned self] reply, unconfirmed in
            if let loneTargets, case .integer(let last) = reply {
                return published(list, members, .array([.integer(last), .integer(loneTargets)]), unconfirmed: unconfirmed)
            }
            published(list, members, reply, unconfirmed: unconfirmed)
        }
        // With `wait_replicas`, a batch holding an acknowledged `pub` is answered after the
        // pass's `WAIT` (`ClusterEngine+Replicas`).
        let wait = replicaWait(forPublishing: list, shard: shard)
        let slot = wait?.add(.publish(finish))
        let sent = dataLink(shard)?.send(arguments) { [unowned self] reply in
            if case .error(let text) = reply, text.hasPrefix("NOSCRIPT") { scriptsMissing(onShard: shard) }
            if let wait, let slot { return wait.replied(slot, reply) }
            finish(reply, nil)
        } ?? false
        if !sent {
            if let wait, let slot { wait.replied(slot, .disconnected) } else { finish(.disconnected, nil) }
        }
        settleHistoryIfDue()
    }

    /// The script answered each run's last `seq` and the nodes it went to: the events'
    /// `seq`s follow from it.
    private func published(_ events: [ClusterState.Event], _ members: [[Int]], _ reply: RedisReply, unconfirmed: String?) {
        let pairs = reply.elements?.compactMap(\.integer) ?? []
        guard pairs.count == 2 * members.count else { return published(events, reply, unconfirmed: unconfirmed) }
        var perEvent = [RedisReply](repeating: .integer(0), count: 2 * events.count)
        for (run, positions) in members.enumerated() {
            for (offset, position) in positions.enumerated() {
                perEvent[2 * position] = .integer(pairs[2 * run] - positions.count + 1 + offset)
                perEvent[2 * position + 1] = .integer(pairs[2 * run + 1])
            }
        }
        published(events, .array(perEvent), unconfirmed: unconfirmed)
    }

    /// Answers each event's waiter from the script's reply; `unconfirmed` (replicas did not
    /// confirm the batch, `wait_replicas`) turns an acknowledged `pub`'s answer into
    /// `unavailable` with that reason: it was published, and may be lost in a failover.
    private func published(_ events: [ClusterState.Event], _ reply: RedisReply, unconfirmed: String?) {
        // The script answers seq and the number of nodes it went to, per event.
        let pairs = reply.elements?.compactMap(\.integer) ?? []
        let seqs = stride(from: 0, to: pairs.count - 1, by: 2).map { pairs[$0] }
        let reached = stride(from: 1, to: pairs.count, by: 2).map { pairs[$0] }
        let failure = seqs.count == events.count && reached.count == events.count ? nil
            : (reply.failure ?? "unexpected reply to publish")
        server.shared.withLock { broker in
            for (position, event) in events.enumerated() where event.receipt != 0 || event.replyToken != nil || event.offer != nil {
                if let offer = event.offer {
                    if failure != nil { broker.clusterOfferUnheard(id: offer.id, attempt: offer.attempt, now: server.main.now) }
                } else if event.directNode != nil {
                    if let failure, event.receipt != 0 { broker.remoteReplyFailed(receipt: event.receipt, reason: failure) }
                } else if let token = event.replyToken {
                    if let failure {
                        broker.clusterRequestUnsent(token: token, unavailable: failure)
                    } else {
                        broker.clusterRequestRouted(token: token, nodes: reached[position])
                    }
                } else if let failure = failure ?? unconfirmed {
                    broker.clusterPublishFailed(receipt: event.receipt, reason: failure)
                } else if reached[position] < 0 {
                    // An idempotent publish its channel had seen: the first one's receipt.
                    broker.clusterPublished(receipt: event.receipt, seq: seqs[position], nodes: -1 - reached[position],
                                            duplicate: true)
                } else {
                    broker.clusterPublished(receipt: event.receipt, seq: seqs[position], nodes: reached[position])
                }
            }
        }
    }

    // MARK: - Interest

    func sendInterest(_ change: ClusterState.InterestChange, again: Bool = false) {
        if let owner = change.lockOwner { return sendLocks(change, owner: owner) }
        if let owner = change.handlerOwner { return sendHandlers(change, owner: owner) }
        if change.added && change.ticket > 0 { barriers.append((change.ticket, nil, uv_hrtime())) }
        var arguments = [Array("EVALSHA".utf8), scripts["interest"] ?? [], Array("0".utf8), Array(prefix.utf8),
                         Array(String(nodeIndex).utf8), Array((change.added ? "+" : "-").utf8), change.pattern]
        if let group = change.group {
            let op = !change.added ? "-" : (change.ticket > 0 || again ? "+" : "=")
            arguments = [Array("EVALSHA".utf8), scripts["groupInterest"] ?? [], Array("0".utf8), Array(prefix.utf8),
                         Array(String(nodeIndex).utf8), Array(op.utf8), change.pattern, group,
                         Array(String(change.members).utf8)]
        }
        // A new group's `ok` waits for its copies on the data shards too (their scripts
        // pick members from them).
        let waits = change.added && change.ticket > 0
        var left = 1
        var version: Int?
        let finish: () -> Void = { [unowned self] in
            left -= 1
            if left == 0 && waits { interestRegistered(ticket: change.ticket, version: version) }
        }
        if change.group != nil { left += copyGroupChange(change, op: change.added ? "+" : "-") { _ in finish() } }
        let sent = commands.send(arguments) { reply in
            version = reply.integer
            finish()
        }
        if !sent { finish() }
    }

    /// One `locks` script call for a connection's lock change; a held answer waits for
    /// every node to acknowledge its version, as a new interest's does.
    private func sendLocks(_ change: ClusterState.InterestChange, owner: ConnectionID) {
        if change.ticket > 0 { barriers.append((change.ticket, nil, uv_hrtime())) }
        let op = change.added ? "L" : (change.lockRecords.isEmpty ? "X" : "U")
        let arguments = [Array("EVALSHA".utf8), scripts["locks"] ?? [], Array("0".utf8), Array(prefix.utf8),
                         Array(String(nodeIndex).utf8), Array(op.utf8), Array(String(owner).utf8)] + change.lockRecords
        let sent = commands.send(arguments) { [unowned self] reply in
            guard change.ticket > 0 else { return }
            interestRegistered(ticket: change.ticket, version: reply.integer)
        }
        if !sent && change.ticket > 0 { interestRegistered(ticket: change.ticket, version: nil) }
    }

    /// Redis gave a new interest its version (nil: it failed; the answer is released so the
    /// `sub` works here, and the interest is registered again on reconnect).
    func interestRegistered(ticket: Int, version: Int?) {
        guard let at = barriers.firstIndex(where: { $0.ticket == ticket }) else { return }
        barriers[at].version = version ?? 0
        releaseBarriers(now: uv_hrtime())
    }

    /// Releases, in order, the held answers every live node has acknowledged.
    func releaseBarriers(now: UInt64) {
        releaseHeldReplies(now: now)
        var done = 0
        while let first = barriers.first, let version = first.version {
            let waiting = acknowledged.filter { $0.value < version && !staleNodes.contains($0.key) }.map(\.key)
            if !waiting.isEmpty {
                guard now &- first.since > Self.barrierTimeoutNs else { break }
                for node in waiting where node != nodeIndex {
                    acknowledged[node] = nil
                    server.logger.warn("cluster node did not acknowledge interest; counted as gone",
                                       ["node": node, "version": version])
                }
                if acknowledged[nodeIndex, default: 0] < version { break }
            }
            done = first.ticket
            barriers.removeFirst()
        }
        guard done > 0 else { return }
        server.shared.withLock { broker in broker.interestSeen(upTo: done) }
        releasedTicket = max(releasedTicket, done)
        sendDeferredCalls()
    }

    // MARK: - Messages

    /// A reply on the subscription link: a subscription confirmed, events for this node, node
    /// messages, table changes (`heardTableChange`) and membership messages.
    private func received(_ reply: RedisReply) {
        guard let parts = reply.elements, parts.count == 3, let kind = parts[0].bytes else { return }
        if kind == Array("subscribe".utf8) { return perform(lifecycle.subscriptionConfirmed()) }
        guard kind == Array("message".utf8), let channel = parts[1].bytes, let payload = parts[2].bytes else { return }
        if channel == ownChannel {
            if ClusterNodeMessage.isNodeMessage(payload) { return nodeMessage(payload) }
            deliver(payload)
        } else if !heardTableChange(payload) {
            membershipMessage(payload)
        }
    }

    func deliver(_ payload: [UInt8]) {
        let now = server.main.now
        let complete = server.shared.withLock { broker in
            var unheard: [[UInt8]] = []
            let complete = payload.withUnsafeBytes { bytes in
                var reader = ClusterMessageReader(bytes)
                return reader.forEach { item in
                    switch item {
                    case .publish(let seq, let from, let channel, let data):
                        broker.deliverRemote(channelBytes: channel, seq: seq, from: from, data: data)
                    case .record(let record):
                        let receivers = broker.deliverRemote(record.event, routing: record.routing, now: now)
                        if receivers == 0, let token = record.replyToken { unheard.append(token) }
                    }
                }
            }
            if !unheard.isEmpty { reportUnheard(unheard, broker: broker) }
            return complete
        }
        if !complete { server.logger.warn("cluster: malformed event message dropped", ["bytes": payload.count]) }
    }

    /// `aNODE V` (acknowledged), `jNODE` (joined), `lNODE` (left), `dNODE V` (declared down
    /// by the reaper); the table changes of the interest channel are the `MirroredTable`s'.
    private func membershipMessage(_ payload: [UInt8]) {
        guard let kind = payload.first else { return }
        let fields = payload.dropFirst().split(separator: 32, maxSplits: 2, omittingEmptySubsequences: false)
        guard let node = fields.first.flatMap(ClusterWireNumber.parse) else { return }
        let version = fields.count > 1 ? ClusterWireNumber.parse(fields[1]) : nil
        switch kind {
        case UInt8(ascii: "a"):
            guard let version, !goneNodes.contains(node) else { return }
            acknowledged[node] = max(acknowledged[node] ?? 0, version)
            releaseBarriers(now: uv_hrtime())
        case UInt8(ascii: "j"):
            if acknowledged[node] == nil && !goneNodes.contains(node) { acknowledged[node] = 0 }
        case UInt8(ascii: "l"), UInt8(ascii: "d"):
            confirmGone(node)
        default:
            return
        }
    }

    /// Tells the other nodes this node applied every change up to `version` (only once it
    /// is ready: `MirrorSync` decides).
    func sendAcknowledgement(_ version: Int) {
        // A node that may have been declared down acknowledges nothing: its old index's
        // acknowledgement put it back in the other nodes' barriers, which then waited the
        // barrier timeout for a node that no longer answers (the chaos run, after every
        // pause: the first `sub` elsewhere took 2 s and, past the timeout, was not exact).
        guard !incarnation.isResetting else { return }
        if incarnation.isHolding || incarnation.mayHaveLapsed(now: uv_hrtime(), timeoutNs: nodeTimeoutNs) {
            heldAcknowledgement = max(heldAcknowledgement ?? 0, version)
            return
        }
        commands.send([Array("PUBLISH".utf8), interestChannel, Array("a\(nodeIndex) \(version)".utf8)]) { _ in }
    }

    /// A node the interest snapshot lists: counted as having acknowledged `version` when it
    /// was not counted yet.
    func nodeSeen(_ node: Int, at version: Int) {
        if acknowledged[node] == nil && !goneNodes.contains(node) { acknowledged[node] = version }
    }

    // MARK: - Start-up and recovery

    /// Loads the scripts again (the command link connected, Redis answered `NOSCRIPT`, a
    /// failed start is tried again): the snapshot run under way, if any, is abandoned.
    func loadScripts() {
        perform(lifecycle.loadScripts())
    }

    /// Performs what the lifecycle decided.
    func perform(_ action: ClusterLifecycle.Action) {
        switch action {
        case .none:
            return
        case .loadScripts:
            flushFence()
        mirror.startOver()
            sendScripts()
        case .readSnapshot(let run, let tag):
            guard let table = mirroredTables.first(where: { $0.tag == tag }) else { return }
            readSnapshot(of: table, run: run)
        case .becomeReady(let again):
            guard !incarnation.isResetting else { return }
            becomeReady(again: again)
        }
    }

    /// Sends every script's `SCRIPT LOAD`; once all are loaded, the lifecycle goes on.
    private func sendScripts() {
        let run = lifecycle.run
        scriptParameters = ClusterScriptParameters(prefix: prefix, config: server.config, shards: shardMap.count)
        let sources = Self.scriptSources(scriptParameters)
        var left = sources.count
        var failure: String?
        for (name, source) in sources {
            commands.send([Array("SCRIPT".utf8), Array("LOAD".utf8), Array(source.utf8)]) { [unowned self] reply in
                if let sha = reply.bytes { scripts[name] = sha } else { failure = reply.failure ?? "bad reply" }
                left -= 1
                guard left == 0 else { return }
                if let failure { return startOverLater("loading the scripts failed", failure, run: run) }
                scriptsLoaded(run: run)
            }
        }
    }

    /// Shard 0's scripts are in: getting ready goes on, but the first time only once every
    /// data shard serves too (or `node_timeout_ms` after start, naming those that do not), so
    /// that no `sub` is answered before this node listens on its channel's shard (a shard
    /// down at start makes only its channels `unavailable`).
    func scriptsLoaded(run: Int) {
        let waiting = dataShards.filter { !$0.isReady }
        if !lifecycle.wasReady, !waiting.isEmpty,
           uv_hrtime() &- startedAt < UInt64(settings.nodeTimeoutMs) * 1_000_000 {
            awaitingShards = run
            return
        }
        awaitingShards = nil
        if !lifecycle.wasReady, !waiting.isEmpty {
            server.logger.warn("cluster: starting without some Redis shards; their channels are unavailable until they serve",
                               ["shards": waiting.map { String($0.index) }.joined(separator: ",")])
        }
        perform(lifecycle.scriptsLoaded(run: run))
    }

    /// A step of getting ready (of run `run`) failed with the link up: logs it, and the next
    /// period starts over from loading the scripts (`everyPeriod`).
    func startOverLater(_ what: String, _ failure: String, run: Int) {
        guard lifecycle.failed(run: run) else { return }
        server.logger.warn("cluster: " + what + "; trying again", ["error": failure])
        flushFence()
        mirror.startOver()
    }

    /// Redis's versions went back (it came back without its data, or a replica behind its
    /// primary took over): what this node knew of the old ones means nothing now. It would
    /// refuse the new versions up to the old high point, count every node as having
    /// acknowledged them already (so held `sub` answers went out before the other nodes
    /// applied the change), and hold answers for versions that will not come again.
    func restartVersions(at version: Int, was: Int) {
        server.logger.info("cluster: Redis's interest versions went back; starting over from them",
                           ["was": was, "now": version])
        table.forgetVersions()
        for (node, acknowledgedVersion) in acknowledged { acknowledged[node] = min(acknowledgedVersion, version) }
        for index in barriers.indices where (barriers[index].version ?? 0) > version { barriers[index].version = 0 }
    }

    /// Every snapshot is read: starts sending; `registersAgain` when it was ready before
    /// (Redis came back).
    private func becomeReady(again registersAgain: Bool) {
        let version = mirror.becomeReady()
        // Registering again comes after the removals queued while Redis was away: a pattern
        // or group removed and then added again in that time must end up registered.
        // Back from an outage (a failover, say): the other nodes could not refresh their
        // liveness either, so none is judged until each had `node_timeout_ms` to do so.
        if registersAgain { reapAfter = uv_hrtime() + UInt64(settings.nodeTimeoutMs) * 1_000_000 }
        commands.send([Array("PUBLISH".utf8), interestChannel, Array("j\(nodeIndex)".utf8)]) { _ in }
        // Everything up to the snapshots' version and the changes heard since is applied.
        sendAcknowledgement(version)
        server.logger.info("cluster ready", ["node": settings.node, "index": nodeIndex])
        if isDownForLocks { markDown(false) }
        if !registersAgain { announceUp() }
        shardsMayServe()
        let pass = queued
        queued = []
        guard registersAgain else {
            incarnation.becameReady()
            publishLiveness()
            send(pass)
            return retryUndeclares()
        }
        // Nothing goes out under this index before Redis says it is still alive (`rejoin`).
        incarnation.hold(pass)
        registerAgain()
    }

    /// Redis is gone (after the cluster was up): receipted `pub`s are `unavailable` at once
    /// rather than queued without bound; a new subscription's `ok` is not held (it works on
    /// this node, and every local pattern is registered again when Redis is back); removals
    /// wait for then.
    /// Tells the broker whether `lock`/`unlock` must be refused (`ClusterState.isDown`).
    func markDown(_ down: Bool) {
        isDownForLocks = down
        server.shared.withLock { broker in broker.cluster?.isDown = down }
    }

    func refuseWhileDown(_ pass: [ClusterCommand]) {
        let events = pass.compactMap(\.event)
        if !events.isEmpty { published(events, .disconnected, unconfirmed: nil) }
        for case .call(let call) in pass { answered(call, .disconnected) }
        let interest = pass.compactMap(\.interestChange)
        queued += interest.filter { !$0.added }.map(ClusterCommand.interest)
        let ticket = interest.filter(\.added).map(\.ticket).max() ?? 0
        guard ticket > 0 else { return }
        server.shared.withLock { broker in broker.interestSeen(upTo: ticket) }
    }

    /// A link dropped: the snapshot run under way is abandoned and getting ready starts
    /// over when the links are back; what waits for Redis is answered now.
    private func lost(_ reason: String) {
        server.shared.withLock { broker in
            broker.abandonResume()
            if lifecycle.wasReady { broker.cluster?.isDown = true }
        }
        isDownForLocks = lifecycle.wasReady
        incarnation.linkLost()
        // An acknowledgement counts versions of the data set it was held on: after a failover
        // the new primary's versions may have gone back, and a late one would tell the other
        // nodes this node applied versions it has not seen (their barriers would release too
        // early). Getting ready again acknowledges what the new snapshots hold.
        heldAcknowledgement = nil
        publishLiveness()
        let held = incarnation.takeHeld()
        if !held.isEmpty { refuseWhileDown(held) }
        if isReady {
            server.logger.warn("cluster: Redis connection lost", ["error": reason, "redis": "\(commands.host):\(commands.port)"])
        }
        lifecycle.lost(commandsConnected: commands.isConnected, messagesConnected: messages.isConnected)
        flushFence()
        mirror.startOver()
        // Held answers go: the subscriptions work on this node (re-registering the node's
        // interest after a reconnect is part of what is left, docs/cluster.md).
        for index in barriers.indices where barriers[index].version == nil { barriers[index].version = 0 }
        releaseBarriers(now: uv_hrtime())
        let events = queued.compactMap(\.event)
        queued.removeAll { $0.event != nil }
        if !events.isEmpty { published(events, .disconnected, unconfirmed: nil) }
        let waiting = deferredCalls
        deferredCalls = []
        for call in waiting { answered(call, .disconnected) }
    }

    /// The timer's tick: the liveness refresh, the reaper and script reloads while ready, a
    /// failed start tried again while not.
    private func everyPeriod() {
        if incarnation.isResetting { return retryJoin() }
        followSentinel()
        if livenessLink.isConnected && !dropIfStalled() { refreshLiveness() }
        refreshShardLiveness()
        if isReady {
            reloadScriptsIfChanged()
            settleHistoryIfDue(force: true)
            collectIdleChannels()
            if uv_hrtime() >= reapAfter { reap() }
            reapInstances()
        } else {
            perform(lifecycle.period(commandsConnected: commands.isConnected))
        }
        if let run = awaitingShards { scriptsLoaded(run: run) }
        if isReady && isDownForLocks { markDown(false) }
        releaseBarriers(now: uv_hrtime())
        expireLockQueries(now: uv_hrtime())
        expireFence()
        commands.flush()
        control.flush()
        flushShards()
    }
}
