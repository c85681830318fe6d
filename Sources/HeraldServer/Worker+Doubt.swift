import HeraldBroker

/// Fail-stop, a loop's side (docs/cluster.md, "Failover and fail-stop"): the connections
/// this loop held while the node's liveness was in doubt (`Connection+Doubt`), and waking the
/// engine to settle it. The engine answers on every loop with `Message.resumeDoubtHeld` once
/// a refresh confirmed the node (or the links went: cluster ops are then refused
/// `unavailable`, which needs no doubt), or closes every client for a new incarnation.
extension Worker {
    /// `connection` holds its lines for the doubt: listed, and the engine asked to look
    /// (once until it looks).
    func heldForDoubt(_ connection: Connection) {
        guard let liveness = server.clusterLiveness else { return }
        if doubtHeld.updateValue(connection, forKey: connection.session.id) == nil { liveness.countHeld(1) }
        if liveness.askProbe() { server.workers[0].post(.probeLiveness) }
    }

    /// The engine says the doubt is over: every held connection of this loop frames its
    /// lines (each may be held again if a new doubt began meanwhile).
    func resumeDoubtHeld() {
        guard !doubtHeld.isEmpty else { return }
        let waiting = Array(doubtHeld.values)
        doubtHeld.removeAll(keepingCapacity: true)
        server.clusterLiveness?.countHeld(-waiting.count)
        for connection in waiting { connection.resumeAfterDoubt() }
    }

    /// A connection closed: it is no longer held.
    func forgetDoubtHeld(_ connection: Connection) {
        guard doubtHeld.removeValue(forKey: connection.session.id) != nil else { return }
        server.clusterLiveness?.countHeld(-1)
    }
}
