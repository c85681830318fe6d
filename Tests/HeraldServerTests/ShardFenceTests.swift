import Testing
@testable import HeraldServer

/// Releases that wait for the data shards (`ShardFence`, issue 33): a release applies only
/// once its fence came back from every serving data shard, changes heard meanwhile queue
/// behind it in order with their acknowledgements, and nothing waits forever. Changes are
/// strings here.
@Suite struct ShardFenceTests {
    /// What the steps applied, with their acknowledgements, and the fences they sent.
    private func read(_ steps: [ShardFence<String>.Step]) -> (applied: [String], acks: [Int], fences: [[Int]]) {
        var applied: [String] = [], acks: [Int] = [], fences: [[Int]] = []
        for step in steps {
            switch step {
            case .apply(let change, let acknowledge):
                applied.append(change)
                if let acknowledge { acks.append(acknowledge) }
            case .sendFence(_, let shards):
                fences.append(shards)
            }
        }
        return (applied, acks, fences)
    }

    /// The id of the fence `steps` sent.
    private func fenceID(_ steps: [ShardFence<String>.Step]) -> Int? {
        for case .sendFence(let id, _) in steps { return id }
        return nil
    }

    @Test func aChangeThatNeedsNoFenceAppliesAtOnce() {
        var fence = ShardFence<String>()
        let steps = read(fence.heard("L1", acknowledge: 1, needsFence: false, serving: [1, 2], now: 0))
        #expect(steps.applied == ["L1"] && steps.acks == [1] && steps.fences.isEmpty)
        #expect(!fence.isWaiting)
    }

    @Test func aReleaseAppliesOnlyOnceEveryServingShardReturnedItsFence() throws {
        var fence = ShardFence<String>()
        let sent = fence.heard("U2", acknowledge: 2, needsFence: true, serving: [1, 2], now: 0)
        #expect(read(sent).applied.isEmpty && read(sent).fences == [[1, 2]])
        let id = try #require(fenceID(sent))
        #expect(read(fence.returned(id, from: 1, serving: [1, 2], now: 1)).applied.isEmpty, "shard 2 has not answered")
        let done = read(fence.returned(id, from: 2, serving: [1, 2], now: 2))
        #expect(done.applied == ["U2"] && done.acks == [2])
        #expect(!fence.isWaiting && fence.queue.isEmpty)
    }

    @Test func changesHeardWhileAFenceIsOutQueueBehindItInOrder() {
        var fence = ShardFence<String>()
        let id = fenceID(fence.heard("U3", acknowledge: 3, needsFence: true, serving: [1], now: 0)) ?? 0
        #expect(read(fence.heard("I4", acknowledge: 4, needsFence: false, serving: [1], now: 0)).applied.isEmpty)
        #expect(read(fence.heard("L5", acknowledge: 5, needsFence: false, serving: [1], now: 0)).applied.isEmpty)
        let done = read(fence.returned(id, from: 1, serving: [1], now: 1))
        #expect(done.applied == ["U3", "I4", "L5"] && done.acks == [3, 4, 5], "acknowledged in order, none early")
    }

    @Test func aSecondReleaseHeardBehindTheFirstGetsAFenceOfItsOwn() {
        var fence = ShardFence<String>()
        let first = fenceID(fence.heard("U1", acknowledge: 1, needsFence: true, serving: [1], now: 0)) ?? 0
        _ = fence.heard("U2", acknowledge: 2, needsFence: true, serving: [1], now: 0)
        _ = fence.heard("L3", acknowledge: 3, needsFence: false, serving: [1], now: 0)
        let afterFirst = fence.returned(first, from: 1, serving: [1], now: 1)
        #expect(read(afterFirst).applied == ["U1"] && read(afterFirst).fences == [[1]], "U2 waits for a fence sent after it was heard")
        let second = fenceID(afterFirst) ?? 0
        #expect(second != first)
        #expect(read(fence.returned(first, from: 1, serving: [1], now: 2)).applied.isEmpty, "a late answer to the old fence counts for nothing")
        #expect(read(fence.returned(second, from: 1, serving: [1], now: 2)).applied == ["U2", "L3"])
    }

    @Test func aShardThatStopsServingIsNotWaitedFor() {
        var fence = ShardFence<String>()
        let id = fenceID(fence.heard("X1", acknowledge: 1, needsFence: true, serving: [1, 2], now: 0)) ?? 0
        _ = fence.returned(id, from: 1, serving: [1, 2], now: 1)
        #expect(read(fence.shardLost(2, serving: [1], now: 2)).applied == ["X1"])
    }

    @Test func withNoServingDataShardAReleaseAppliesAtOnce() {
        var fence = ShardFence<String>()
        #expect(read(fence.heard("U1", acknowledge: 1, needsFence: true, serving: [], now: 0)).applied == ["U1"])
    }

    @Test func aFenceThatNeverReturnsIsGivenUpAfterTheTimeout() {
        var fence = ShardFence<String>()
        _ = fence.heard("U1", acknowledge: 1, needsFence: true, serving: [1], now: 100)
        _ = fence.heard("I2", acknowledge: 2, needsFence: false, serving: [1], now: 100)
        #expect(read(fence.expire(now: 150, timeoutNs: 100, serving: [1])).applied.isEmpty, "not due yet")
        #expect(read(fence.expire(now: 201, timeoutNs: 100, serving: [1])).applied == ["U1", "I2"])
    }

    @Test func aFlushAppliesEverythingQueuedAndForgetsTheFence() {
        var fence = ShardFence<String>()
        let id = fenceID(fence.heard("U1", acknowledge: 1, needsFence: true, serving: [1], now: 0)) ?? 0
        _ = fence.heard("U2", acknowledge: 2, needsFence: true, serving: [1], now: 0)
        #expect(read(fence.flush()).applied == ["U1", "U2"])
        #expect(read(fence.returned(id, from: 1, serving: [1], now: 1)).applied.isEmpty, "the old fence's answer is ignored")
        #expect(read(fence.heard("I3", acknowledge: 3, needsFence: false, serving: [1], now: 2)).applied == ["I3"])
    }

    /// A hostile or buggy run of releases costs one fence out at a time, never one per
    /// release in flight: 10,000 releases queue behind the first fence.
    @Test func tenThousandReleasesKeepOneFenceOut() {
        var fence = ShardFence<String>()
        var fences = 0
        for index in 0..<10_000 {
            fences += read(fence.heard("U\(index)", acknowledge: index, needsFence: true, serving: [1, 2], now: 0)).fences.count
        }
        #expect(fences == 1 && fence.queue.count == 10_000)
    }
}
