import HeraldWire

/// `$sys` events in cluster mode (docs/cluster.md, "Everything else"): each node's events
/// go through the publish path like any event, so a `$sys.…` subscriber on any node gets
/// every node's, with one `seq` per channel for the cluster, and `data` carries
/// `"node":NAME` to say where it happened (`client` ids already differ by node).
extension Broker {
    /// Publishes `$sys.node.up` (`{"index":I,"name":NAME,"node":…}`) or `$sys.node.down`
    /// (the same with `"reason":"timeout"|"left"`); `node` (added on the way out, as for
    /// every `$sys` event in cluster mode) is the node that reports it.
    public func publishClusterNodeEvent(up: Bool, index: Int, name: String, reason: String? = nil) {
        var data: [UInt8] = []
        data.appendRaw(#"{"index":"#)
        data.appendInt(index)
        data.appendRaw(#","name":"#)
        data.appendJSONString(Array(name.utf8))
        if let reason {
            data.appendRaw(#","reason":"#)
            data.appendJSONString(Array(reason.utf8))
        }
        data.append(UInt8(ascii: "}"))
        queueSystemEvent(up ? "$sys.node.up" : "$sys.node.down", data)
        flushSystemEvents()
    }

    /// Queues the pending system events for Redis, each `data` ending in `"node":NAME`.
    /// They keep no history, as on one node; the engine drops those no node listens to.
    func publishSystemEventsToCluster(_ cluster: ClusterState) {
        var node: [UInt8] = []
        node.appendRaw(#","node":"#)
        node.appendJSONString(Array(cluster.nodeName.utf8))
        node.append(UInt8(ascii: "}"))
        for event in pendingSystemEvents {
            var data = event.data
            guard data.last == UInt8(ascii: "}") else { continue }
            data.removeLast()
            data.append(contentsOf: node)
            cluster.enqueue(ClusterState.Event(channel: event.channel, from: systemSession.id, data: data, receipt: 0,
                                               keepsHistory: event.keepsHistory))
        }
        pendingSystemEvents.removeAll(keepingCapacity: true)
    }
}
