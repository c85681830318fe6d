import CLibUV
import HeraldBroker

/// Signal handlers across nodes, the engine's side (docs/cluster.md, "Signals and links"):
/// a local handler's registration is one `handlers` script call whose `sub` answer waits
/// for every node to apply its version (the interest barrier; the table's mirror is
/// `HandlerMirror`); signal messages between nodes are published straight to the other
/// node's channel.
extension ClusterEngine {
    /// One `handlers` script call for a connection's handler change.
    func sendHandlers(_ change: ClusterState.InterestChange, owner: ConnectionID) {
        if change.ticket > 0 { barriers.append((change.ticket, nil, uv_hrtime())) }
        let arguments = [Array("EVALSHA".utf8), scripts["handlers"] ?? [], Array("0".utf8), Array(prefix.utf8),
                         Array(String(nodeIndex).utf8), [change.handlerOp], Array(String(owner).utf8)] + change.handlerRecords
        let sent = commands.send(arguments) { [unowned self] reply in
            guard change.ticket > 0 else { return }
            interestRegistered(ticket: change.ticket, version: reply.integer)
        }
        if !sent && change.ticket > 0 { interestRegistered(ticket: change.ticket, version: nil) }
    }

    /// Publishes a signal message to another node. An offer no node heard (its node is
    /// gone) or that Redis refused counts as that handler gone.
    func sendSignalMessage(_ event: ClusterState.Event, to node: Int) {
        let channel = Array((prefix + "n:" + String(node)).utf8)
        let offer = event.offer
        let sent = commands.send([Array("PUBLISH".utf8), channel, event.data ?? []]) { [unowned self] reply in
            guard let offer, reply.failure != nil || reply.integer == 0 else { return }
            offerUnheard(offer)
        }
        if !sent, let offer { offerUnheard(offer) }
    }

    /// An offer that reached no node.
    func offerUnheard(_ offer: ClusterState.OfferRef) {
        let now = server.main.now
        server.shared.withLock { broker in broker.clusterOfferUnheard(id: offer.id, attempt: offer.attempt, now: now) }
    }
}
