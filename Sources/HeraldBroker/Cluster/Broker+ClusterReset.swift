import HeraldWire

/// Fail-stop (docs/cluster.md, "Failover and fail-stop"): a node the cluster declared down
/// while it ran does not register its old ownerships again. It ends every connection with
/// `node_reset` (their subscriptions, locks, links, handlers and instance channels go with
/// them, as on any disconnect) and carries on under a new index, a new incarnation.
extension Broker {
    /// Ends every connection with `{"error":"node_reset","message":…}`.
    /// - Parameters:
    ///   - reason: why the node was declared down, in the message (plain text, no quotes needed).
    ///   - now: the loop's clock (ms).
    /// - Returns: how many connections were told.
    @discardableResult
    public func closeForNodeReset(reason: String, now: Int) -> Int {
        var told = 0
        let message = "this node was declared down by the cluster (" + reason
            + "); its subscriptions, locks, links, handlers and instance channels are gone: reconnect and restore"
        for session in sessions.values where !session.closeAfterFlush {
            closeWithNodeReset(session, message: message, now: now)
            told += 1
        }
        flushSystemEvents()
        return told
    }

    /// The node's liveness deadline passed unconfirmed (docs/cluster.md, "Failover and
    /// fail-stop"): every connection holding a lock or an instance channel is told
    /// `node_reset` and closed, so no holder believes in what the cluster may hand on.
    /// - Returns: how many were closed.
    public func closeOwnersForNodeDoubt(now: Int) -> Int {
        let message = "this node could not confirm in time that the cluster still counts it alive; "
            + "its locks and instance channels may be someone else's now: reconnect and restore"
        var told = 0
        for session in sessions.values where !session.closeAfterFlush && holdsClusterOwnership(session) {
            closeWithNodeReset(session, message: message, now: now)
            told += 1
        }
        if told > 0 { flushSystemEvents() }
        return told
    }

    private func closeWithNodeReset(_ session: Session, message: String, now: Int) {
        write(session) { out in
            out.appendRaw(#"{"error":"node_reset","message":"#)
            out.appendJSONString(message)
            out.appendRaw("}\n")
        }
        close(session, now: now)
    }

    /// The node joined again under `index`: client ids, reply tokens and ownership records
    /// from now on carry it.
    public func startClusterIncarnation(index: Int) {
        cluster?.nodeIndex = index
        // The new index holds no grant of any user's limits; the reaper gives the old one's back.
        cluster?.leases.removeAll()
    }
}
