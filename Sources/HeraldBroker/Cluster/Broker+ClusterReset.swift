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
            write(session) { out in
                out.appendRaw(#"{"error":"node_reset","message":"#)
                out.appendJSONString(message)
                out.appendRaw("}\n")
            }
            close(session, now: now)
            told += 1
        }
        flushSystemEvents()
        return told
    }

    /// The node joined again under `index`: client ids, reply tokens and ownership records
    /// from now on carry it.
    public func startClusterIncarnation(index: Int) {
        cluster?.nodeIndex = index
    }
}
