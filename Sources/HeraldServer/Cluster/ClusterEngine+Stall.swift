import CLibUV

/// A Redis that stops answering while its connections stay up (a partition, a hung
/// server), the engine's side (docs/cluster.md, "Partitions"): the liveness refresh doubles
/// as a probe. When one has waited longer than `node_timeout_ms` (by then the other nodes
/// stop counting this one as alive anyway), both links are dropped, so every parked op is
/// answered `unavailable` and the node serves as it does with Redis gone, reconnecting
/// with backoff until Redis answers again.
extension ClusterEngine {
    /// Sends the liveness refresh (`{p}alive:INDEX` with the node timeout as TTL) unless one
    /// is still waiting for its reply, and times its round trip.
    func refreshLiveness() {
        guard refreshSentAt == nil else { return }
        let sentAt = uv_hrtime()
        refreshSentAt = sentAt
        commands.send([Array("SET".utf8), Array((prefix + "alive:" + String(nodeIndex)).utf8), Array("1".utf8),
                       Array("PX".utf8), Array(String(settings.nodeTimeoutMs).utf8)]) { [unowned self] reply in
            if refreshSentAt == sentAt { refreshSentAt = nil }
            if reply.failure == nil { redisRoundTripUs = Int((uv_hrtime() &- sentAt) / 1_000) }
        }
    }

    /// Drops both links when the refresh in flight has waited past the node timeout.
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
        return true
    }
}
