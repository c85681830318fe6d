import HeraldWire

/// Links across nodes (docs/cluster.md, "Signals and links"): the links live in Redis
/// (`ClusterLinkScripts`), where one script per `link` checks `conflict` and `cycle` against
/// every node's links, so two links made on different nodes at the same moment cannot make
/// a loop. Every node mirrors all links in its own table (`links`), so a signal's route is
/// resolved locally as on one node; the `link`/`unlink` answer comes once every live node
/// applied the change (the engine holds the script's reply until then).
extension Broker {
    /// Parks `session` until the `link` script answered and every node applied it.
    func linkInCluster(_ channel: [UInt8], to parent: [UInt8], for session: Session, _ cluster: ClusterState) {
        let arguments = [Array(String(cluster.nodeIndex).utf8), Array(String(session.id).utf8), channel, parent]
        park(session, on: cluster, .link, channel: nil, arguments: arguments, op: .link, claiming: channel, parent: parent)
    }

    /// Parks `session` until the `unlink` script answered and every node applied it.
    func unlinkInCluster(_ channel: [UInt8], for session: Session, _ cluster: ClusterState) {
        let arguments = [Array(String(cluster.nodeIndex).utf8), Array(String(session.id).utf8), channel]
        park(session, on: cluster, .unlink, channel: nil, arguments: arguments, op: .unlink, claiming: channel)
    }

    /// The script answered `{0, VERSION}` or `{1, CODE, MESSAGE}`: applies the change here
    /// and answers.
    func finishLink(_ op: Op, of channel: [UInt8], parent: [UInt8]?, by session: Session, result: ClusterValue) {
        guard let parts = result.elements, let status = parts.first?.int else {
            return failUnavailable(session, result)
        }
        guard status == 0 else {
            let code = parts.count > 1 ? parts[1].bytes.map { String(decoding: $0, as: UTF8.self) } ?? "internal" : "internal"
            let message = parts.count > 2 ? parts[2].bytes.map { String(decoding: $0, as: UTF8.self) } ?? "" : ""
            return writeError(session, code: code, message: message, rev: nil)
        }
        if op == .link, let parent {
            setLink(channel, to: parent, ownedBy: session.id)
            answerLink(session, channel, parent)
        } else {
            dropLink(channel, ownedBy: session.id)
            answerUnlink(session, channel)
        }
    }

    /// A link made for a connection that left meanwhile is removed again.
    func abandonLink(of channel: [UInt8], by owner: ConnectionID, result: ClusterValue, _ cluster: ClusterState) {
        guard result.elements?.first?.int == 0 else { return }
        cluster.unlinkAll([channel], owner: owner)
    }

    /// Another node's link set (`parent`) or removed (nil).
    public func applyClusterLink(owner: ConnectionID, channel: [UInt8], parent: [UInt8]?) {
        if let parent {
            setLink(channel, to: parent, ownedBy: owner)
        } else {
            dropLink(channel, ownedBy: owner)
        }
    }

    /// A node left or was declared down: its connections' links go. Costs the owners with
    /// links plus that node's links.
    public func releaseClusterLinks(ofNode node: Int) {
        for (owner, channels) in linksByOwner where ClusterOwner.node(of: owner) == node {
            for channel in channels { dropLink(channel, ownedBy: owner) }
        }
    }

    /// At (re)connect: the other nodes' links become exactly `snapshot` (read at one version).
    public func replaceClusterLinks(with snapshot: [(owner: ConnectionID, channel: [UInt8], parent: [UInt8])], ownNode: Int) {
        for (owner, channels) in linksByOwner where ClusterOwner.node(of: owner) != ownNode {
            for channel in channels { dropLink(channel, ownedBy: owner) }
        }
        for entry in snapshot where ClusterOwner.node(of: entry.owner) != ownNode {
            setLink(entry.channel, to: entry.parent, ownedBy: entry.owner)
        }
    }

    /// This node's connections' links (to register again after Redis came back).
    public func localLinks(ownNode: Int) -> [(owner: ConnectionID, channel: [UInt8], parent: [UInt8])] {
        linksByOwner.filter { ClusterOwner.node(of: $0.key) == ownNode }.flatMap { owner, channels in
            channels.compactMap { channel in links[channel].map { (owner, channel, $0.parent) } }
        }
    }
}
