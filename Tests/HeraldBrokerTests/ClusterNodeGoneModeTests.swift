import Testing
@testable import HeraldBroker

/// A node that left or was declared down loses its rows in every mirrored table (the
/// engine's `nodeGone` loops over them): its connections' locks, links and handlers and its
/// routing entries, found by the owner's node (`ClusterOwner.node(of:)`); another node's rows
/// stay.
@Suite struct ClusterNodeGoneModeTests {
    private func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    @Test func aGoneNodesRowsLeaveEveryTableAndAnotherNodesStay() {
        let (harness, cluster) = BrokerHarness.clustered(node: 1)
        let broker = harness.broker
        let gone = 2 << 32 | 5
        let staying = 3 << 32 | 5
        let interest = InterestTable()
        for owner in [gone, staying] {
            let node = ClusterOwner.node(of: owner)
            broker.applyClusterLocks(owner: owner, records: [bytes("P3:a.*")], added: true)
            broker.applyClusterLink(owner: owner, channel: bytes("l\(node)"), parent: bytes("p"))
            broker.applyClusterHandlers(op: UInt8(ascii: "A"), owner: owner,
                                        handlers: [ClusterHandler(owner: owner, name: bytes("h"), pattern: bytes("a.>"), score: node)],
                                        names: [])
            interest.apply(node: node, pattern: bytes("a.\(node)"), added: true, version: node)
        }
        broker.releaseClusterLocks(ofNode: 2)
        broker.releaseClusterLinks(ofNode: 2)
        broker.releaseClusterHandlers(ofNode: 2)
        interest.forget(node: 2)
        #expect(broker.localLockRecords(ownNode: 2).isEmpty && broker.localLockRecords(ownNode: 3).count == 1)
        #expect(broker.localLinks(ownNode: 2).isEmpty && broker.localLinks(ownNode: 3).count == 1)
        #expect(cluster.handlers.owners == [staying])
        #expect(interest.nodes(for: bytes("a.2")).isEmpty && interest.nodes(for: bytes("a.3")) == [3])
    }

    @Test func theOwnersNodeIsItsTopThirtyTwoBits() {
        #expect(ClusterOwner.node(of: 7 << 32 | 0xFFFF_FFFF) == 7)
        #expect(ClusterOwner.node(of: 12) == 0)
    }
}
