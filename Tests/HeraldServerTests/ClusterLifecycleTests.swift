import Testing
@testable import HeraldServer

/// The engine's way to readiness (`ClusterLifecycle`): scripts and subscriptions before the
/// snapshots, the tables read in order, ready only after the last, a reply of an abandoned
/// run ignored, a failure retried the next period, and readiness after an outage telling
/// the engine to register again.
@Suite struct ClusterLifecycleTests {
    private let tables: [MirrorTableTag] = [.interest, .locks, .links, .handlers]

    /// A lifecycle connected, its scripts loaded and both subscriptions on: reading the
    /// first table.
    private func reading() -> ClusterLifecycle {
        var lifecycle = ClusterLifecycle(tables: tables)
        _ = lifecycle.loadScripts()
        _ = lifecycle.subscriptionConfirmed()
        _ = lifecycle.subscriptionConfirmed()
        _ = lifecycle.scriptsLoaded(run: lifecycle.run)
        return lifecycle
    }

    @Test func snapshotsWaitForTheScriptsAndBothSubscriptions() {
        var lifecycle = ClusterLifecycle(tables: tables)
        let load = lifecycle.loadScripts()
        #expect(load == .loadScripts)
        let one = lifecycle.subscriptionConfirmed()
        #expect(one == .none)
        let loaded = lifecycle.scriptsLoaded(run: lifecycle.run)
        #expect(loaded == .none, "one subscription is not on yet")
        #expect(lifecycle.phase == .subscribing)
        let both = lifecycle.subscriptionConfirmed()
        #expect(both == .readSnapshot(run: lifecycle.run, table: .interest))
    }

    @Test func theTablesAreReadInOrderAndReadinessComesOnlyAfterTheLast() {
        var lifecycle = reading()
        let run = lifecycle.run
        let interest = lifecycle.snapshotRead(run: run, table: .interest)
        #expect(interest == .readSnapshot(run: run, table: .locks))
        #expect(!lifecycle.isReady)
        let locks = lifecycle.snapshotRead(run: run, table: .locks)
        #expect(locks == .readSnapshot(run: run, table: .links))
        let links = lifecycle.snapshotRead(run: run, table: .links)
        #expect(links == .readSnapshot(run: run, table: .handlers))
        #expect(!lifecycle.isReady)
        let handlers = lifecycle.snapshotRead(run: run, table: .handlers)
        #expect(handlers == .becomeReady(again: false))
        #expect(lifecycle.isReady && lifecycle.wasReady)
    }

    @Test func aReplyOfAnAbandonedRunIsIgnored() {
        var lifecycle = reading()
        let old = lifecycle.run
        _ = lifecycle.loadScripts()
        _ = lifecycle.scriptsLoaded(run: lifecycle.run)
        #expect(lifecycle.run != old)
        let stale = lifecycle.snapshotRead(run: old, table: .interest)
        #expect(stale == .none)
        #expect(!lifecycle.awaits(run: old, table: .interest))
        let failedOld = lifecycle.failed(run: old)
        #expect(!failedOld, "a failure of the old run changes nothing")
        #expect(lifecycle.phase == .readingSnapshot(run: lifecycle.run, table: .interest))
    }

    @Test func aReplyForAnotherTableThanTheOneAwaitedIsIgnored() {
        var lifecycle = reading()
        let other = lifecycle.snapshotRead(run: lifecycle.run, table: .locks)
        #expect(other == .none)
    }

    @Test func aFailureIsRetriedTheNextPeriodWhileTheLinkIsUp() {
        var lifecycle = reading()
        let run = lifecycle.run
        let taken = lifecycle.failed(run: run)
        #expect(taken)
        #expect(lifecycle.phase == .failed)
        let stale = lifecycle.snapshotRead(run: run, table: .interest)
        #expect(stale == .none, "the failed run is abandoned")
        let down = lifecycle.period(commandsConnected: false)
        #expect(down == .none, "the link's reconnect loads the scripts")
        let up = lifecycle.period(commandsConnected: true)
        #expect(up == .loadScripts)
        #expect(lifecycle.phase == .loadingScripts)
    }

    @Test func aLostSubscriptionLinkWaitsForBothSubscriptionsAgainWithTheScriptsKept() {
        var lifecycle = reading()
        let run = lifecycle.run
        _ = lifecycle.snapshotRead(run: run, table: .interest)
        lifecycle.lost(commandsConnected: true, messagesConnected: false)
        #expect(lifecycle.phase == .subscribing)
        let stale = lifecycle.snapshotRead(run: run, table: .locks)
        #expect(stale == .none)
        lifecycle.subscriptionRestarted()
        let one = lifecycle.subscriptionConfirmed()
        #expect(one == .none)
        let both = lifecycle.subscriptionConfirmed()
        #expect(both == .readSnapshot(run: lifecycle.run, table: .interest))
    }

    @Test func readinessAfterAnOutageSaysToRegisterAgain() {
        var lifecycle = reading()
        for table in tables { _ = lifecycle.snapshotRead(run: lifecycle.run, table: table) }
        lifecycle.lost(commandsConnected: false, messagesConnected: true)
        #expect(lifecycle.phase == .connecting && !lifecycle.isReady && lifecycle.wasReady)
        _ = lifecycle.loadScripts()
        let loaded = lifecycle.scriptsLoaded(run: lifecycle.run)
        #expect(loaded == .readSnapshot(run: lifecycle.run, table: .interest))
        var last = ClusterLifecycle.Action.none
        for table in tables { last = lifecycle.snapshotRead(run: lifecycle.run, table: table) }
        #expect(last == .becomeReady(again: true))
    }

    @Test func scriptsLoadedByAnAbandonedLoadStartNothing() {
        var lifecycle = ClusterLifecycle(tables: tables)
        _ = lifecycle.loadScripts()
        let old = lifecycle.run
        _ = lifecycle.loadScripts()
        _ = lifecycle.subscriptionConfirmed()
        _ = lifecycle.subscriptionConfirmed()
        let stale = lifecycle.scriptsLoaded(run: old)
        #expect(stale == .none)
        #expect(lifecycle.phase == .loadingScripts)
    }
}
