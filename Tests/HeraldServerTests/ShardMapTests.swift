import Testing
@testable import HeraldServer

/// The placement of channels over Redis shards (issue 33, step 1): FNV-1a 64 and jump
/// consistent hash as published, even spread, and minimal movement when a shard is added.
@Suite struct ShardMapTests {
    @Test func fnv1a64GivesThePublishedTestVectors() {
        #expect(ShardMap.fnv1a64(Array("".utf8)) == 0xcbf2_9ce4_8422_2325)
        #expect(ShardMap.fnv1a64(Array("a".utf8)) == 0xaf63_dc4c_8601_ec8c)
        #expect(ShardMap.fnv1a64(Array("foobar".utf8)) == 0x8594_4171_f739_67e8)
    }

    /// Values of the paper's reference code, transcribed independently (Python).
    @Test func jumpHashGivesTheReferenceCodesBuckets() {
        #expect(ShardMap.jump(0, buckets: 10) == 0)
        #expect(ShardMap.jump(1, buckets: 10) == 6)
        #expect(ShardMap.jump(0xdead_beef, buckets: 1_000) == 285)
        #expect([2, 3, 5, 10].map { ShardMap(count: $0).shard(of: Array("a".utf8)) } == [1, 2, 2, 2])
        #expect([2, 3, 5, 10].map { ShardMap(count: $0).shard(of: Array("foobar".utf8)) } == [1, 1, 1, 5])
    }

    @Test func oneShardHoldsEverything() {
        let map = ShardMap(count: 1)
        #expect((0..<1_000).allSatisfy { map.shard(of: Array("c.\($0)".utf8)) == 0 })
        #expect(ShardMap(count: 0).count == 1)
    }

    /// 100,000 channels over 3 shards: each within 2% of a third (issue 33 asks ±15% of
    /// the load; placement is the part the hash decides).
    @Test func channelsSpreadEvenly() {
        let map = ShardMap(count: 3)
        var counts = [0, 0, 0]
        for n in 0..<100_000 { counts[map.shard(of: Array("app.user.\(n).profile".utf8))] += 1 }
        #expect(counts.allSatisfy { abs($0 - 33_333) < 667 }, "\(counts)")
    }

    /// From 2 to 3 shards only channels that go to the new shard move, about a third.
    @Test func addingAShardMovesOnlyWhatGoesToIt() {
        let two = ShardMap(count: 2)
        let three = ShardMap(count: 3)
        var moved = 0
        for n in 0..<30_000 {
            let name = Array("ch.\(n)".utf8)
            let before = two.shard(of: name)
            let after = three.shard(of: name)
            if before != after {
                moved += 1
                #expect(after == 2, "a moved channel goes to the new shard")
            }
        }
        #expect(moved > 9_000 && moved < 11_000, "about a third moves: \(moved)")
    }

    @Test func theDaemonsOwnChannelsAllLiveOnTheFirstShard() {
        let map = ShardMap(count: 5)
        for name in ["$sys.client.connected", "$sys.client.disconnected", "$sys.node.down", "$presence.room"] {
            #expect(map.shard(of: Array(name.utf8)) == 0, "\(name)")
        }
        #expect(Set((0..<100).map { map.shard(of: Array("user.\($0)".utf8)) }).count == 5, "other names still spread")
    }
}
