import HeraldBroker

/// The engine's part of requests and queue groups across nodes (docs/cluster.md): routing
/// each event of a batch (target nodes and matching groups from the routing table), what
/// needs no script (a request nobody can receive is `no_responders` at once, a `$sys` event
/// nobody listens to is dropped, a reply goes straight to the requester's node), and the
/// node messages that come back (`ClusterNodeMessage`).
extension ClusterEngine {
    /// One event of a batch with where it goes.
    typealias RoutedEvent = (event: ClusterState.Event, nodes: [Int], groups: [[UInt8]])

    /// Sends the batch's node messages, answers the requests that reach nobody, drops the
    /// `$sys` events nobody listens to. - Returns: the events for the publish script.
    func routeDirect(_ batch: [ClusterState.Event]) -> [RoutedEvent] {
        var routed: [RoutedEvent] = []
        var unheard: [[UInt8]] = []
        routed.reserveCapacity(batch.count)
        // A batch is mostly runs of one channel: its routing is looked up once per run.
        var last: (channel: [UInt8], nodes: [Int], groups: [[UInt8]])?
        for event in batch {
            if let node = event.directNode {
                if event.isSignalMessage { sendSignalMessage(event, to: node) } else { sendReply(event, to: node) }
                continue
            }
            if last?.channel != event.channel {
                last = (event.channel, table.nodes(for: event.channel), table.groups(for: event.channel))
            }
            let nodes = last?.nodes ?? []
            let groups = last?.groups ?? []
            if nodes.isEmpty && groups.isEmpty {
                if let token = event.replyToken {
                    unheard.append(token)
                    continue
                }
                if !event.keepsHistory && event.receipt == 0 { continue }
            }
            routed.append((event, nodes, groups))
        }
        if !unheard.isEmpty {
            server.shared.withLock { broker in
                for token in unheard { broker.clusterRequestUnsent(token: token, unavailable: nil) }
            }
        }
        return routed
    }

    /// Publishes a reply to the requester's node. With a receipt the replier waits for that
    /// node's answer, or is told `delivered:false` at once when no node listens there (the
    /// requester's node is gone).
    private func sendReply(_ event: ClusterState.Event, to node: Int) {
        let message = ClusterNodeMessage.reply(receipt: event.receipt, node: nodeIndex, from: event.from,
                                               token: event.replyToken ?? [], data: event.data)
        let channel = Array((prefix + "n:" + String(node)).utf8)
        let receipt = event.receipt
        let sent = commands.send([Array("PUBLISH".utf8), channel, message.encoded]) { [unowned self] reply in
            guard receipt != 0 else { return }
            if let failure = reply.failure {
                server.shared.withLock { broker in broker.remoteReplyFailed(receipt: receipt, reason: failure) }
            } else if reply.integer == 0 {
                server.shared.withLock { broker in broker.remoteReplyAnswered(receipt: receipt, delivered: false) }
            }
        }
        if !sent && receipt != 0 {
            server.shared.withLock { broker in broker.remoteReplyFailed(receipt: receipt, reason: "connection to Redis lost") }
        }
    }

    /// A message on this node's channel that is not events: a reply to one of this node's
    /// requests (answered, and its sender told whether it won), or such an answer.
    func nodeMessage(_ payload: [UInt8]) {
        if ClusterSignalMessage.isSignalMessage(payload) {
            let now = server.main.now
            return server.shared.withLock { broker in broker.clusterSignalMessage(payload, now: now) }
        }
        guard let message = ClusterNodeMessage.decode(payload) else {
            server.logger.warn("cluster: malformed node message dropped", ["bytes": payload.count])
            return
        }
        switch message {
        case .reply(let receipt, let node, let from, let token, let data):
            let delivered = server.shared.withLock { broker in broker.remoteReply(token: token, from: from, data: data) }
            guard receipt != 0 else { return }
            let answer = ClusterNodeMessage.replyAnswered(receipt: receipt, delivered: delivered)
            commands.send([Array("PUBLISH".utf8), Array((prefix + "n:" + String(node)).utf8), answer.encoded]) { _ in }
        case .replyAnswered(let receipt, let delivered):
            server.shared.withLock { broker in broker.remoteReplyAnswered(receipt: receipt, delivered: delivered) }
        case .unheard(let token):
            server.shared.withLock { broker in broker.clusterRequestUnheard(token: token) }
        case .locksQuery(let id, let node, let kind, let user, let channel):
            // After every lock change heard before it (some may wait behind a fence).
            runInOrder { [unowned self] in answerLockQuery(id: id, node: node, kind: kind, user: user, channel: channel) }
        case .locksAnswer(let id, let node, let truncated, let locked, let unlocked):
            lockQueryAnswered(id: id, from: node, truncated: truncated, locked: locked, unlocked: unlocked)
        }
    }

    /// Tells the requesters' nodes of requests delivered here to nobody (this node's own
    /// requests are counted at once), so a request nobody may take is `no_responders`, not
    /// `timeout`. Called under the broker's lock, after a batch was delivered.
    func reportUnheard(_ tokens: [[UInt8]], broker: Broker) {
        for token in tokens {
            guard token.count == 32, let node = Int(String(decoding: token.prefix(8), as: UTF8.self), radix: 16) else { continue }
            if node == nodeIndex {
                broker.clusterRequestUnheard(token: token)
            } else {
                commands.send([Array("PUBLISH".utf8), Array((prefix + "n:" + String(node)).utf8),
                               ClusterNodeMessage.unheard(token: token).encoded]) { _ in }
            }
        }
    }
}
