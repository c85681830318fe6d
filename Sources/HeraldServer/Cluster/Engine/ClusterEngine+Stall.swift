import CLibUV

/// A Redis that stops answering while its connections stay up (a partition, a hung
/// server), the engine's side (docs/cluster.md, "Partitions"): the liveness refresh doubles
/// as a probe. When one has waited longer than `node_timeout_ms` (by then the other nodes
/// stop counting this one as alive anyway), every link is dropped, so every parked op is
/// answered `unavailable` and the node serves as it does with Redis gone, reconnecting
/// with backoff until Redis answers again.
///
/// The refresh goes on the control link, which carries nothing else but the reaper: what it
/// measures is how long Redis takes to answer, not how much script work this node queued on
/// the command link ahead of it. On `commands` a flood's backlog delayed it past the timeout,
/// and a node that was only busy cut its links and was declared down (issue 29).
extension ClusterEngine {
    /// Where the refresh goes: the control link, or the command link while the control
    /// link alone is down (reconnecting), so that a lost control connection costs no lapse.
    var livenessLink: RedisLink { control.isConnected ? control : commands }

    /// Sends the liveness refresh (`{p}alive:INDEX` with the node timeout as TTL) unless one
    /// is still waiting for its reply, and times its round trip.
    func refreshLiveness() {
        guard refreshSentAt == nil else { return }
        let sentAt = uv_hrtime()
        refreshSentAt = sentAt
        livenessLink.send([Array("EVAL".utf8), Array(Self.refreshScript.utf8), Array("1".utf8),
                       Array((prefix + "alive:" + String(nodeIndex)).utf8), Array(String(settings.nodeTimeoutMs).utf8)]) { [unowned self] reply in
            if refreshSentAt == sentAt { refreshSentAt = nil }
            guard reply.failure == nil else { return }
            redisRoundTripUs = Int((uv_hrtime() &- sentAt) / 1_000)
            if let had = reply.integer { livenessChecked(present: had == 1, sentAt: sentAt) }
        }
    }

    /// Sets the liveness key with the node timeout as TTL; answers whether it was there.
    /// (A script, not `SET … GET`, which needs Redis 6.2.)
    static let refreshScript = """
    local had = redis.call('EXISTS', KEYS[1])
    redis.call('SET', KEYS[1], '1', 'PX', ARGV[1])
    return had
    """

    /// A refresh sent at `sentAt` answered. The key gone, with the refresh sent after this
    /// incarnation registered: the node stalled past `node_timeout_ms` (a SIGSTOP, a starved
    /// process, a slow link) and the key expired. A node that read the tables in that window
    /// left this node's interest, locks, links and handlers out, and a reaper may have
    /// released them: the node starts a new incarnation (fail-stop). The key there: what was
    /// held for the doubt goes out, once the answer is recent enough.
    func livenessChecked(present: Bool, sentAt: UInt64) {
        let verdict = incarnation.refreshAnswered(sentAt: sentAt, present: present, now: uv_hrtime(), timeoutNs: nodeTimeoutNs)
        if verdict != .reset { publishLiveness() }
        switch verdict {
        case .none:
            return
        case .release:
            releaseHeld()
            commands.flush()
        case .probeAgain:
            refreshLiveness()
        case .reset:
            startNewIncarnation("its liveness key had expired: a stall past node_timeout_ms")
        }
    }

    /// Drops every link when the refresh in flight has waited past the node timeout.
    /// - Returns: whether it dropped them.
    func dropIfStalled() -> Bool {
        guard let sentAt = refreshSentAt, uv_hrtime() &- sentAt > UInt64(settings.nodeTimeoutMs) * 1_000_000 else {
            return false
        }
        refreshSentAt = nil
        let reason = "no reply from Redis for \(settings.nodeTimeoutMs) ms"
        server.logger.warn("cluster: Redis stopped answering; dropping the connections", ["timeout_ms": settings.nodeTimeoutMs])
        commands.cut(reason)
        messages.cut(reason)
        control.cut(reason)
        return true
    }
}
