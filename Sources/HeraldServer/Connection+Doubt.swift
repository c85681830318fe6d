import HeraldBroker

/// Fail-stop, a connection's side (docs/cluster.md, "Failover and fail-stop"): while the
/// node's liveness is in doubt (`ClusterLiveness`), none of its lines is framed. Its bytes
/// are held and its reads stop, as for a parked `hello`; when the engine's refresh confirms
/// the node, its loop frames them (`Worker+Doubt`); when the node was declared down, the
/// connection is closed with `node_reset` and they are never answered.
extension Connection {
    /// Under the broker lock, before framing: whether the lines must wait for the engine.
    /// Cut off from Redis past the deadline, only a connection holding locks or instance
    /// channels waits: what the node answers it (an `unlock` or `remove` `ok`) would vouch
    /// for something the cluster may have handed to someone else meanwhile; the others are
    /// served as in any Redis outage.
    func mustHoldForDoubt(now: Int, broker: Broker) -> Bool {
        guard let liveness = worker.server.clusterLiveness, liveness.isInDoubt(nowMs: now) else { return false }
        return !liveness.isCutOff || broker.holdsClusterOwnership(session)
    }

    /// On this loop, once the doubt is over: frames the held lines as if just read.
    func resumeAfterDoubt() {
        resumeAfterYield()
    }
}
