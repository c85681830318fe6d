import HeraldBroker

/// The link table's mirror (docs/cluster.md, "Signals and links"): `K`/`k` announcements on
/// the interest channel, every live node's links read by `linkSnapshot`, the broker's
/// `links` holding every node's links.
///
/// Its snapshot is exact (`MirrorSnapshotPolicy.exact`), for the lock table's reason: a
/// missed `unlink` must not leave a route behind. Its resync sets every link again with a
/// `link` call, each announced in full.
final class LinkMirror: EngineMirror, MirroredTable {
    /// Another node's link change (this node's own are applied when their reply is
    /// delivered).
    func apply(_ message: ClusterLinkMessage) {
        withBroker { broker in
            for channel in message.channels {
                broker.applyClusterLink(owner: message.owner, channel: channel, parent: message.parent)
            }
        }
    }

    /// `OWNER, CHANNEL, PARENT` triples: the other nodes' links here become exactly those.
    func applySnapshot(_ entries: [RedisReply], at version: Int) {
        let rows = entries.chunks(of: 3).compactMap(Self.link)
        let node = engine.nodeIndex
        withBroker { broker in broker.replaceClusterLinks(with: rows, ownNode: node) }
    }

    /// One snapshot entry. - Returns: nil when malformed.
    private static func link(_ entry: [RedisReply]) -> (owner: ConnectionID, channel: [UInt8], parent: [UInt8])? {
        guard let owner = entry[0].bytes.flatMap(ClusterWireNumber.parse), let channel = entry[1].bytes,
              let parent = entry[2].bytes else { return nil }
        return (owner, channel, parent)
    }

    /// Every link of the node's connections goes.
    func nodeGone(_ node: Int) {
        withBroker { broker in broker.releaseClusterLinks(ofNode: node) }
    }

    /// Drops the links Redis still has for this node that it no longer holds (a change lost
    /// in flight), then sets every link again (a Redis restarted without its data lost them;
    /// one refused now as `conflict` or `cycle` stays only here).
    func resync() {
        let node = engine.nodeIndex
        let owned = withBroker { broker in broker.localLinks(ownNode: node) }
        var resync = engine.scriptCall("linkResync") + [Array(String(node).utf8)]
        for (owner, channel, _) in owned { resync += [channel, Array(String(owner).utf8)] }
        engine.commands.send(resync) { _ in }
        for (owner, channel, parent) in owned {
            let arguments = [Array(String(node).utf8), Array(String(owner).utf8), channel, parent]
            engine.sendCall(ClusterState.ScriptCall(unwaited: .link, arguments: arguments))
        }
    }
}
