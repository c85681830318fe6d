import CLibUV
import HeraldBroker

/// Signal handlers across nodes, the engine's side (docs/cluster.md, "Signals and links"):
/// a local handler's registration is one `handlers` script call whose `sub` answer waits
/// for every node to apply its version (the interest barrier); every node, this one
/// included, enters the announced handlers in its table; at (re)connect the node reads
/// every live node's handlers at one version; signal messages between nodes are published
/// straight to the other node's channel.
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

    /// A handler change heard on the interest channel (any node's, this one's too: its
    /// table holds every handler with its score). Before the snapshot, changes wait to be
    /// replayed over it.
    func handlerMessage(_ payload: [UInt8]) {
        let parsed = ClusterHandlerMessage(payload)
        guard let message = admit(parsed, "handler", bytes: payload.count, hold: { heldHandlerMessages.append($0) }) else { return }
        apply(message)
        acknowledge(message.version)
    }

    private func apply(_ message: ClusterHandlerMessage) {
        server.shared.withLock { broker in
            broker.applyClusterHandlers(op: message.op, owner: message.owner, handlers: message.handlers, names: message.names)
        }
    }

    /// Reads every live node's handlers at one version, makes the other nodes' handlers
    /// here exactly those, replays the changes heard since, then becomes ready.
    func takeHandlerSnapshot() {
        readSnapshot("handlerSnapshot", of: "handler") { [unowned self] version, parts in
            var snapshot: [ClusterHandler] = []
            for entry in parts.chunks(of: 2) {
                guard let owner = entry[0].bytes.flatMap({ Int(String(decoding: $0, as: UTF8.self)) }) else { continue }
                for pair in (entry[1].elements ?? []).chunks(of: 2) {
                    guard let name = pair[0].bytes, let value = pair[1].bytes, let space = value.firstIndex(of: 32),
                          let score = Int(String(decoding: value[..<space], as: UTF8.self)) else { continue }
                    snapshot.append(ClusterHandler(owner: owner, name: name, pattern: Array(value[(space + 1)...]), score: score))
                }
            }
            server.shared.withLock { broker in broker.replaceClusterHandlers(with: snapshot, ownNode: nodeIndex) }
            let heard = heldHandlerMessages
            heldHandlerMessages = []
            replay(heard.map { message in (message.version, { [unowned self] in apply(message) }) }, over: version)
            becomeReady()
        }
    }

    /// After Redis came back: drops the handlers Redis still has for connections of this
    /// node that no longer hold any, then sets each connection's handlers exactly, keeping
    /// the scores they had (a Redis restarted without its data lost them; one made while
    /// Redis was away gets its score now).
    func registerHandlersAgain() {
        let local = server.shared.withLock { broker in broker.localHandlers() }
        let owners = local.map { Array(String($0.owner).utf8) }
        commands.send([Array("EVALSHA".utf8), scripts["handlerResync"] ?? [], Array("0".utf8), Array(prefix.utf8),
                       Array(String(nodeIndex).utf8)] + owners) { _ in }
        for (owner, handlers) in local {
            var change = ClusterState.InterestChange(pattern: [], added: true, ticket: 0)
            change.handlerOwner = owner
            change.handlerOp = UInt8(ascii: "S")
            change.handlerRecords = handlers.flatMap { [$0.name, $0.pattern, Array(String($0.score).utf8)] }
            sendHandlers(change, owner: owner)
        }
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
