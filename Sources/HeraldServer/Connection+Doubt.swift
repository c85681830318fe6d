import HeraldBroker

/// Fail-stop, a connection's side (docs/cluster.md, "Failover and fail-stop"): while the
/// node's liveness is in doubt (`ClusterLiveness`), none of its lines is framed. Its bytes
/// are held and its reads stop, as for a parked `hello`; when the engine's refresh confirms
/// the node, its loop frames them (`Worker+Doubt`); when the node was declared down, the
/// connection is closed with `node_reset` and they are never answered.
extension Connection {
    /// Under the broker lock, before framing: whether the lines must wait for the engine.
    func mustHoldForDoubt(now: Int) -> Bool {
        guard let liveness = worker.server.clusterLiveness else { return false }
        return liveness.isInDoubt(nowMs: now)
    }

    /// On this loop, once the doubt is over: frames the held lines as if just read.
    func resumeAfterDoubt() {
        resumeAfterYield()
    }
}
