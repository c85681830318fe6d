import CLibUV
import HeraldBroker

/// Links across nodes, the engine's side (docs/cluster.md, "Signals and links"): link
/// changes of other nodes arrive on the interest channel and are applied to the broker's
/// link table, then acknowledged; a `link`/`unlink` reply is held until every live node
/// acknowledged its version, so the route is the same on every node from the `ok` on; at
/// (re)connect the node reads every live node's links at one version.
extension ClusterEngine {
    /// A link change heard on the interest channel. This node's own are applied when their
    /// reply is delivered; before the snapshot, changes wait to be replayed over it.
    func linkMessage(_ message: ClusterLinkMessage) {
        guard isReady else {
            heldLinkMessages.append(message)
            return
        }
        apply(message)
        acknowledge(message.version)
    }

    private func apply(_ message: ClusterLinkMessage) {
        guard message.node != nodeIndex else { return }
        server.shared.withLock { broker in
            for channel in message.channels {
                broker.applyClusterLink(owner: message.owner, channel: channel, parent: message.parent)
            }
        }
    }

    /// Holds a `link`/`unlink` reply until every live node applied `version`.
    func holdUntilApplied(_ call: ClusterState.ScriptCall, _ reply: RedisReply, version: Int) {
        heldReplies.append((version, uv_hrtime(), call, reply))
        releaseBarriers(now: uv_hrtime())
    }

    /// Delivers, in order, the held replies every live node has applied (or that waited
    /// longer than a barrier may, or all of them once Redis is gone).
    func releaseHeldReplies(now: UInt64) {
        while let first = heldReplies.first {
            let applied = minimumAcknowledged >= first.version
            guard applied || !isReady || now &- first.since > Self.barrierTimeoutNs else { return }
            heldReplies.removeFirst()
            deliver(first.call, first.reply)
        }
    }

    /// Reads every live node's links at one version, makes the other nodes' links here
    /// exactly those, replays the changes heard since that version, then reads the handlers.
    func takeLinkSnapshot() {
        readSnapshot("linkSnapshot", of: "link") { [unowned self] version, parts in
            var snapshot: [(owner: ConnectionID, channel: [UInt8], parent: [UInt8])] = []
            for entry in parts.chunks(of: 3) {
                if let owner = entry[0].bytes.flatMap({ Int(String(decoding: $0, as: UTF8.self)) }),
                   let channel = entry[1].bytes, let parent = entry[2].bytes {
                    snapshot.append((owner, channel, parent))
                }
            }
            server.shared.withLock { broker in broker.replaceClusterLinks(with: snapshot, ownNode: nodeIndex) }
            let heard = heldLinkMessages
            heldLinkMessages = []
            replay(heard.map { message in (message.version, { [unowned self] in apply(message) }) }, over: version)
            takeHandlerSnapshot()
        }
    }

    /// After Redis came back: drops the links Redis still has for this node that it no
    /// longer holds (a change lost in flight), then sets its links again (a Redis restarted
    /// without its data lost them; one refused now as `conflict` or `cycle` stays only here).
    func registerLinksAgain() {
        let owned = server.shared.withLock { broker in broker.localLinks(ownNode: nodeIndex) }
        var resync = [Array("EVALSHA".utf8), scripts["linkResync"] ?? [], Array("0".utf8), Array(prefix.utf8),
                      Array(String(nodeIndex).utf8)]
        for (owner, channel, _) in owned { resync += [channel, Array(String(owner).utf8)] }
        commands.send(resync) { _ in }
        for (owner, channel, parent) in owned {
            let arguments = [Array(String(nodeIndex).utf8), Array(String(owner).utf8), channel, parent]
            sendCall(ClusterState.ScriptCall(unwaited: .link, arguments: arguments))
        }
    }
}
