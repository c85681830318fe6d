import Testing
@testable import HeraldServer

/// The sync rules every mirrored table shares (`MirrorSync`): held changes replayed over
/// their table's snapshot, exact and merge snapshots, versions that went back, a new
/// subscription, and what the node acknowledges. Changes are strings here: the rules never
/// look inside them.
@Suite struct MirrorSyncTests {
    /// A sync that heard `changes` (table, version, name) while waiting, in that order.
    private func waiting(after changes: [(MirrorTableTag, Int, String)], lastSeen: Int = 0) -> MirrorSync<String> {
        var sync = MirrorSync<String>()
        if lastSeen > 0 {
            _ = sync.snapshotRead(.interest, version: lastSeen, policy: .merge)
            _ = sync.becomeReady()
            sync.startOver()
        }
        for (table, version, name) in changes { _ = sync.heard(table, version: version, name) }
        return sync
    }

    @Test func changesHeardBeforeTheSnapshotAreHeldInArrivalOrderAcrossTables() {
        var sync = MirrorSync<String>()
        let first = sync.heard(.locks, version: 12, "lock 12")
        #expect(first == .held)
        let second = sync.heard(.interest, version: 11, "interest 11")
        #expect(second == .held)
        let third = sync.heard(.locks, version: 10, "lock 10")
        #expect(third == .held)
        #expect(sync.held.map(\.change) == ["lock 12", "interest 11", "lock 10"], "one queue, in arrival order")
    }

    @Test func anExactSnapshotReplaysOnlyItsTablesChangesNewerThanItsVersionInArrivalOrder() {
        var sync = waiting(after: [(.locks, 13, "L13"), (.interest, 14, "I14"), (.locks, 9, "L9"), (.locks, 10, "L10"),
                                   (.locks, 11, "L11")])
        let read = sync.snapshotRead(.locks, version: 10, policy: .exact)
        #expect(read.replay == ["L13", "L11"], "newer than 10, in the order heard; 9 and 10 are in the snapshot")
        #expect(!read.versionsWentBack)
        #expect(sync.held.map(\.change) == ["I14"], "the other tables' changes stay held")
    }

    @Test func aMergeSnapshotReplaysEveryHeldChangeSinceTheTableRefusesOlderOnes() {
        var sync = waiting(after: [(.interest, 9, "I9"), (.interest, 12, "I12")])
        let read = sync.snapshotRead(.interest, version: 10, policy: .merge)
        #expect(read.replay == ["I9", "I12"])
    }

    @Test func aTableReadAlreadyAppliesItsChangesAtOnceButAcknowledgesNothingUntilReady() {
        var sync = MirrorSync<String>()
        _ = sync.snapshotRead(.interest, version: 10, policy: .merge)
        let interest = sync.heard(.interest, version: 11, "I11")
        #expect(interest == .apply(acknowledge: nil))
        let lock = sync.heard(.locks, version: 12, "L12")
        #expect(lock == .held, "locks are not read yet")
        _ = sync.snapshotRead(.locks, version: 12, policy: .exact)
        let acknowledged = sync.becomeReady()
        #expect(acknowledged == 12, "ready: everything up to the newest version seen is applied")
        let news = sync.heard(.locks, version: 13, "L13")
        #expect(news == .apply(acknowledge: 13))
        let again = sync.heard(.locks, version: 13, "L13 again")
        #expect(again == .apply(acknowledge: nil), "acknowledged once")
    }

    @Test func versionsThatWentBackReplayEveryHeldChangeAndRestartTheAcknowledgements() {
        var sync = waiting(after: [(.locks, 3, "L3"), (.locks, 6, "L6")], lastSeen: 500)
        let interest = sync.snapshotRead(.interest, version: 5, policy: .merge)
        #expect(interest.versionsWentBack, "5 is below the 500 seen before")
        #expect(sync.lastSeenVersion == 5)
        let locks = sync.snapshotRead(.locks, version: 5, policy: .exact)
        #expect(!locks.versionsWentBack, "counted once, for the first table read")
        #expect(locks.replay == ["L6"])
        let acknowledged = sync.becomeReady()
        #expect(acknowledged == 6)
        let below = sync.heard(.interest, version: 7, "I7")
        #expect(below == .apply(acknowledge: 7), "acknowledged although below 500")
    }

    @Test func whenVersionsWentBackAnExactTableReplaysItsHeldChangesAllOfThem() {
        var sync = waiting(after: [(.locks, 3, "L3"), (.locks, 6, "L6")], lastSeen: 500)
        let read = sync.snapshotRead(.locks, version: 5, policy: .exact)
        #expect(read.versionsWentBack && read.replay == ["L3", "L6"])
    }

    @Test func aNewSubscriptionDropsTheHeldChanges() {
        var sync = waiting(after: [(.locks, 12, "L12"), (.handlers, 13, "H13")])
        sync.subscriptionRestarted()
        #expect(sync.held.isEmpty)
        let read = sync.snapshotRead(.locks, version: 10, policy: .exact)
        #expect(read.replay.isEmpty)
    }

    @Test func startingOverKeepsTheHeldChangesButReadsEveryTableAgain() {
        var sync = MirrorSync<String>()
        _ = sync.snapshotRead(.interest, version: 10, policy: .merge)
        _ = sync.heard(.locks, version: 12, "L12")
        sync.startOver()
        let interest = sync.heard(.interest, version: 13, "I13")
        #expect(interest == .held, "interest is to be read again")
        #expect(sync.held.map(\.change) == ["L12", "I13"], "the subscription that heard L12 is still on")
    }

    @Test func anOutageAfterReadinessWaitsAgainWithTheVersionSeenAsItsFloor() {
        var sync = MirrorSync<String>()
        _ = sync.snapshotRead(.interest, version: 40, policy: .merge)
        _ = sync.becomeReady()
        sync.startOver()
        #expect(!sync.isReady)
        let heard = sync.heard(.interest, version: 41, "I41")
        #expect(heard == .held)
        let read = sync.snapshotRead(.interest, version: 40, policy: .merge)
        #expect(!read.versionsWentBack, "40 is not below 40")
    }
}
