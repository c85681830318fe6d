import Testing
@testable import HeraldServer

/// Reading Redis's client list for the nodes' pub/sub backlog (`PubSubBacklog`, issue 29):
/// only this cluster's named connections of live nodes count.
struct PubSubBacklogTests {
    private static let listing = Array("""
    id=5 addr=127.0.0.1:1 laddr=127.0.0.1:6379 fd=9 name=herald:n1 age=3 idle=0 flags=P sub=2 obl=0 oll=0 omem=1024 tot-mem=2048 events=r cmd=subscribe
    id=6 addr=127.0.0.1:2 laddr=127.0.0.1:6379 fd=10 name=herald:n2 age=3 idle=0 flags=P sub=2 obl=0 oll=3 omem=9000000 tot-mem=9001000 events=rw cmd=subscribe
    id=7 addr=127.0.0.1:3 laddr=127.0.0.1:6379 fd=11 name=other:n3 age=3 idle=0 flags=P sub=1 obl=0 oll=9 omem=50000000 tot-mem=50001000 events=rw cmd=subscribe
    id=8 addr=127.0.0.1:4 laddr=127.0.0.1:6379 fd=12 name= age=3 idle=0 flags=P sub=1 obl=0 oll=9 omem=40000000 tot-mem=40001000 events=rw cmd=subscribe
    id=9 addr=127.0.0.1:5 laddr=127.0.0.1:6379 fd=13 name=herald:n2x age=3 idle=0 flags=P sub=1 omem=30000000 cmd=subscribe

    """.utf8)

    @Test func theLargestBacklogOfALiveNodeOfThisClusterCounts() {
        let prefix = PubSubBacklog.namePrefix("herald:")
        #expect(PubSubBacklog.largestBacklog(in: Self.listing, namePrefix: prefix, isLive: { _ in true }) == 9_000_000,
                "other prefixes, unnamed clients and names that only start like ours are left out")
        #expect(PubSubBacklog.largestBacklog(in: Self.listing, namePrefix: prefix, isLive: { $0 != 2 }) == 1_024,
                "a node declared down holds nobody up")
        #expect(PubSubBacklog.largestBacklog(in: [], namePrefix: prefix, isLive: { _ in true }) == 0)
    }

    @Test func namesAreThePrefixWithoutWhatRedisRefusesThenTheIndex() {
        #expect(PubSubBacklog.name(prefix: "herald:", node: 12) == Array("herald:n12".utf8))
        #expect(PubSubBacklog.name(prefix: "my app\n", node: 3) == Array("my_app_n3".utf8))
    }
}
