import CLibUV
import HeraldBroker

/// Fail-stop (docs/cluster.md, "Failover and fail-stop"): a node that learns the cluster
/// declared it down while it ran (its index in `{p}dead`, its liveness key lapsed, a
/// confirmed `d` about itself, a script refusing its index) never registers its old
/// ownerships again. It closes every client connection with `node_reset`, cuts its Redis
/// links, joins again under a new index (blocking, as at start) and becomes ready as a new
/// incarnation; its clients reconnect and restore. A node whose liveness may have lapsed
/// holds every cluster command until Redis says which it is.
extension ClusterEngine {
    /// The node timeout in ns.
    var nodeTimeoutNs: UInt64 { UInt64(settings.nodeTimeoutMs) * 1_000_000 }

    /// Holds `pass` when the node's liveness is in doubt (or commands are held already),
    /// and asks Redis. - Returns: whether it held it.
    func mustHold(_ pass: [ClusterCommand]) -> Bool {
        guard incarnation.isHolding || incarnation.mayHaveLapsed(now: uv_hrtime(), timeoutNs: nodeTimeoutNs) else {
            return false
        }
        if !incarnation.isHolding {
            server.logger.warn("cluster: no liveness refresh confirmed within node_timeout_ms (a stall?); holding cluster ops until Redis answers",
                               ["timeout_ms": settings.nodeTimeoutMs])
        }
        incarnation.hold(pass)
        if livenessLink.isConnected { refreshLiveness() }
        return true
    }

    /// Sends what was held, in order, with the acknowledgement held meanwhile.
    func releaseHeld() {
        let pass = incarnation.takeHeld()
        if !pass.isEmpty { send(pass) }
        if let version = heldAcknowledgement {
            heldAcknowledgement = nil
            sendAcknowledgement(version)
        }
    }

    // MARK: - Client lines in doubt

    /// Tells every loop until when the node surely lives (`ClusterLiveness`), and, when that
    /// is in the future, lets the connections held for a doubt go on.
    func publishLiveness() {
        guard let liveness = server.clusterLiveness else { return }
        let deadline: Int
        if incarnation.isResetting || incarnation.awaitsFirstReady {
            deadline = 0
        } else {
            // The loops' clock (`uv_now`) may lag the precise one by a few ms: a margin.
            let until = (incarnation.confirmedAt &+ nodeTimeoutNs) / 1_000_000
            deadline = Int(until) - Self.livenessMarginMs
        }
        let justCutOff = liveness.setDeadline(deadline, cutOff: !incarnation.isResetting && !incarnation.isRegistered)
        armDeadline(deadline)
        // Cut off, the connections that hold nothing go on (those that do are held again).
        guard liveness.heldConnections > 0, justCutOff || !liveness.isInDoubt(nowMs: server.main.now) else { return }
        for worker in server.workers { worker.post(.resumeDoubtHeld) }
    }

    /// How much sooner than the key's expiry the loops count the node in doubt (ms).
    static let livenessMarginMs = 10

    /// Arms the deadline timer (a real deadline: not while resetting or not yet ready).
    private func armDeadline(_ deadline: Int) {
        guard deadline > 0, deadline < Int.max else {
            uv_timer_stop(deadlineTimer)
            return
        }
        let delay = UInt64(max(0, deadline - server.main.now) + 1)
        uv_timer_start(deadlineTimer, { timer in
            guard let data = timer?.pointee.data else { return }
            Unmanaged<ClusterEngine>.fromOpaque(data).takeUnretainedValue().livenessDeadlineReached()
        }, delay, 0)
    }

    /// The deadline passed without a refresh confirming the node (a stall, a slow or cut
    /// link, Redis gone): the others may declare it down any moment and hand its locks and
    /// instance channels on, so it stops vouching for them now, before a reaper can act: every
    /// connection holding one is told `node_reset` and closed (its teardown releases them
    /// here; Redis hears of it when it answers again). Lease semantics: the chaos run's
    /// delayed link left a client believing for 2.5 s that it owned a channel another node
    /// had given away. The other connections wait for the verdict (or, cut off, are served
    /// as in any outage). A Redis outage therefore costs lock and instance-channel holders
    /// their connection after `node_timeout_ms`; they restore when Redis is back.
    func livenessDeadlineReached() {
        guard let liveness = server.clusterLiveness, liveness.isInDoubt(nowMs: server.main.now),
              !incarnation.isResetting, !incarnation.awaitsFirstReady else { return }
        let now = server.main.now
        let told = server.shared.withLock { broker in broker.closeOwnersForNodeDoubt(now: now) }
        server.main.flushDirty()
        if told > 0 {
            server.logger.warn("cluster: no liveness refresh confirmed by the deadline; closed the connections holding locks or instance channels",
                               ["connections": told, "timeout_ms": settings.nodeTimeoutMs])
        }
        // Cluster commands are held by `send` from now on (`mustHold`), until a refresh says.
    }

    /// A loop held client lines for a doubt (`Worker.Message.probeLiveness`): settles it.
    /// Over already: the lines go on. Else, with the node registered and ready, cluster
    /// commands are held too and a refresh is sent (`livenessChecked` releases or resets);
    /// while resetting, the new incarnation's registration releases them (the connections
    /// of the old one are closed first).
    func livenessDoubted() {
        server.clusterLiveness?.probeTaken()
        // Resetting, not ready yet, or cut off: registering (again) lets them go.
        guard !incarnation.isResetting, !incarnation.awaitsFirstReady, incarnation.isRegistered else { return }
        if isReady, incarnation.isRegistered, incarnation.mayHaveLapsed(now: uv_hrtime(), timeoutNs: nodeTimeoutNs) {
            _ = mustHold([])
            return
        }
        publishLiveness()
    }

    /// A script refused this node's index (`DEAD INDEX …`, `ClusterNodeScripts.refuseDead`):
    /// the reaper declared it down. Another index's refusal is a late reply of an earlier
    /// incarnation and is ignored.
    func refusedAsDead(_ text: String) {
        guard text.hasPrefix("DEAD "), let index = Int(text.dropFirst(5).prefix { $0 != " " }),
              index == nodeIndex else { return }
        startNewIncarnation("Redis refused its index as declared down")
    }

    /// Begins a new incarnation: every client is told and closed, the links are cut, and the
    /// node joins again under a new index.
    func startNewIncarnation(_ reason: String) {
        guard incarnation.beginReset(reason) else { return }
        heldAcknowledgement = nil
        publishLiveness()
        server.logger.error("cluster: this node was declared down while running; closing every client (node_reset) and joining again under a new index",
                            ["node": settings.node, "index": nodeIndex, "reason": reason])
        for link in [commands, messages, control] { link.cut("this node was declared down") }
        cutShards("this node was declared down")
        refreshSentAt = nil
        retryJoin()
    }

    /// Closes every client connection with `node_reset` (again while joining fails: whoever
    /// connected meanwhile got an id of the old index) and tries to join.
    func retryJoin() {
        let now = uv_hrtime()
        guard now >= incarnation.nextJoinAt else { return }
        let told = server.shared.withLock { broker in broker.closeForNodeReset(reason: incarnation.reason, now: server.main.now) }
        server.main.flushDirty()
        if told > 0 { server.logger.warn("cluster: closed client connections for the reset", ["connections": told]) }
        do {
            let epoch = server.shared.withLock { broker in broker.config.epoch }
            adopt(try ClusterJoin.join(currentSettings, epochCandidate: epoch))
        } catch {
            incarnation.joinFailed(now: uv_hrtime())
            server.logger.warn("cluster: joining again failed; trying again", ["error": error.description])
        }
    }

    /// The node joined again as `join.nodeIndex`: ids, tokens and records carry it from now
    /// on, and the links start over under it (its own node channel is a new one).
    private func adopt(_ join: ClusterJoin) {
        let old = nodeIndex
        nodeIndex = join.nodeIndex
        server.shared.withLock { broker in broker.startClusterIncarnation(index: join.nodeIndex) }
        server.nextConnectionID = (join.nodeIndex << 32) | 1
        acknowledged = [nodeIndex: 0]
        staleNodes = []
        goneChecks = []
        incarnation.endReset(registeredAt: uv_hrtime())
        publishLiveness()
        for link in [commands, messages, control] { link.cut("joined again under a new index") }
        cutShards("joined again under a new index")
        server.logger.warn("cluster: joined again as a new incarnation", ["node": settings.node, "old_index": old, "index": nodeIndex])
    }
}
