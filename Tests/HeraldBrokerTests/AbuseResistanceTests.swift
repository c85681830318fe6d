import Foundation
import Testing
@testable import HeraldBroker
import HeraldWire

/// Issue 12, sections 1 and 2 (the parts in the lock, link, instance and listing code):
/// answers that page and stay bounded, new per-connection caps, answers that carry nothing
/// the asker may not see, and a reload that takes back locks, links and declared channels.
/// What each costs is shown by `scripts/fault abuse`, not timed here.
@Suite struct AbuseResistanceTests {
    private func names(_ frame: [String: Any]) -> [String] {
        (frame["channels"] as? [[String: Any]] ?? []).compactMap { $0["ch"] as? String }
    }

    @Test func channelsAnswersOnePageInByteOrderAndResumesAfterNext() {
        let harness = BrokerHarness()
        let s = harness.connect()
        for n in 0..<250 { harness.send(s, #"{"op":"pub","ch":"app.c\#(1000 + n)"}"#) }
        harness.send(s, #"{"op":"pub","ch":"other.x"}"#)
        _ = harness.frames(s)
        var listed: [String] = []
        var after: String?
        var pages = 0
        repeat {
            let afterField = after.map { #","after":"\#($0)""# } ?? ""
            let page = harness.request(s, #"{"op":"channels","ch":"app.*"\#(afterField)}"#)
            #expect(page["ok"] as? String == "channels", "\(page)")
            #expect(names(page).count <= 100)
            listed += names(page)
            after = page["next"] as? String
            pages += 1
        } while after != nil && pages < 10
        #expect(pages == 3)
        #expect(listed == (0..<250).map { "app.c\(1000 + $0)" })
        let small = harness.request(s, #"{"op":"channels","ch":"app.*","limit":2}"#)
        #expect(names(small) == ["app.c1000", "app.c1001"] && small["next"] as? String == "app.c1001")
        let last = harness.request(s, #"{"op":"channels","ch":"app.*","after":"app.c1248"}"#)
        #expect(names(last) == ["app.c1249"] && last["next"] == nil, "the last page has no next")
    }

    @Test(arguments: ["0", "1001", "-1", "\"5\""])
    func channelsLimitOutsideOneToAThousandIsBadField(limit: String) {
        let harness = BrokerHarness()
        let s = harness.connect()
        #expect(harness.request(s, #"{"op":"channels","limit":\#(limit)}"#)["error"] as? String == "bad_field")
    }

    /// A pattern whose matches are rare among many names: each call looks at a bounded
    /// number of names and hands back a cursor; following it finds every match once.
    @Test func sparseMatchesAreFoundByFollowingTheCursorAcrossBoundedCalls() {
        let harness = BrokerHarness()
        let s = harness.connect()
        let total = Broker.listScanBudget * 3 + 17
        for n in 0..<total { harness.send(s, #"{"op":"pub","ch":"a.n\#(n)"}"#) }
        for n in [5, 20_000, total - 1] { harness.send(s, #"{"op":"pub","ch":"a.n\#(n).x"}"#) }
        _ = harness.frames(s)
        var found: [String] = []
        var after: String?
        var calls = 0
        repeat {
            let afterField = after.map { #","after":"\#($0)""# } ?? ""
            let page = harness.request(s, #"{"op":"channels","ch":"a.*.x"\#(afterField)}"#)
            found += names(page)
            after = page["next"] as? String
            calls += 1
        } while after != nil && calls < 20
        #expect(found.sorted() == ["a.n20000.x", "a.n\(total - 1).x", "a.n5.x"].sorted())
        #expect(calls >= 4, "no call looked at more than listScanBudget names")
        let none = harness.request(s, #"{"op":"channels","ch":"b.*"}"#)
        #expect(names(none).isEmpty && none["next"] == nil, "a prefix nobody uses is answered at once")
    }

    @Test func channelsListsExactSubscriptionsAndLinksAndForgetsThemWhenTheyGo() {
        let harness = BrokerHarness()
        let s = harness.connect()
        harness.subscribe(s, #""ch":"k.sub","sub":"a""#)
        _ = harness.request(s, #"{"op":"link","ch":"k.linked","parent":"k"}"#)
        #expect(names(harness.request(s, #"{"op":"channels","ch":"k.*"}"#)) == ["k.linked", "k.sub"])
        _ = harness.request(s, #"{"op":"unsub","sub":"a"}"#)
        _ = harness.request(s, #"{"op":"unlink","ch":"k.linked"}"#)
        #expect(names(harness.request(s, #"{"op":"channels","ch":"k.*"}"#)).isEmpty)
        var left: [String] = []
        harness.broker.directory.forEach(from: [], excluding: false) { left.append(String(decoding: $0, as: UTF8.self)); return true }
        #expect(left.filter { !$0.hasPrefix("$") }.isEmpty, "nothing is left behind: \(left)")
    }

    @Test func subWithArgsPastMaxArgsBytesIsLimitAndCreatesNothing() {
        var config = BrokerConfig(epoch: "e")
        config.maxArgsBytes = 64
        let harness = BrokerHarness(config)
        let s = harness.connect()
        let big = String(repeating: "x", count: 100)
        let refused = harness.request(s, #"{"op":"sub","ch":"a","args":"\#(big)","rid":1}"#)
        #expect(refused["error"] as? String == "limit" && refused["rid"] as? Int == 1)
        #expect(s.subscriptions.isEmpty)
        #expect(harness.request(s, #"{"op":"sub","ch":"a","args":{"k":1}}"#)["ok"] as? String == "sub")
    }

    @Test func maxArgsBytesDefaultsTo4KiB() {
        #expect(BrokerConfig().maxArgsBytes == 4_096)
    }

    @Test func declarePastMaxDeclaredIsLimitButRedeclaringIsFine() {
        var config = BrokerConfig(epoch: "e")
        config.maxDeclared = 2
        let harness = BrokerHarness(config)
        let s = harness.connect()
        #expect(harness.request(s, #"{"op":"declare","ch":"i.1"}"#)["ok"] as? String == "declare")
        #expect(harness.request(s, #"{"op":"declare","ch":"i.2"}"#)["ok"] as? String == "declare")
        #expect(harness.request(s, #"{"op":"declare","ch":"i.2"}"#)["ok"] as? String == "declare")
        #expect(harness.request(s, #"{"op":"declare","ch":"i.3"}"#)["error"] as? String == "limit")
        #expect(harness.request(s, #"{"op":"remove","ch":"i.1"}"#)["ok"] as? String == "remove")
        #expect(harness.request(s, #"{"op":"declare","ch":"i.3"}"#)["ok"] as? String == "declare")
    }

    @Test func linkPastMaxLinksIsLimitButRelinkingIsFine() {
        var config = BrokerConfig(epoch: "e")
        config.maxLinks = 1
        let harness = BrokerHarness(config)
        let s = harness.connect()
        #expect(harness.request(s, #"{"op":"link","ch":"l.a","parent":"p"}"#)["ok"] as? String == "link")
        #expect(harness.request(s, #"{"op":"link","ch":"l.a","parent":"q"}"#)["ok"] as? String == "link")
        #expect(harness.request(s, #"{"op":"link","ch":"l.b","parent":"p"}"#)["error"] as? String == "limit")
        harness.broker.disconnect(s)
        #expect(harness.broker.links.isEmpty && harness.broker.linksByOwner.isEmpty)
    }

    @Test func manyDeclaredChannelsAreRemovedInDeclarationOrderAndLeaveNothing() {
        let harness = BrokerHarness()
        let owner = harness.connect()
        let watcher = harness.connect()
        harness.subscribe(watcher, #""ch":"$sys.channel.removed""#)
        let count = 2_000
        for n in 0..<count { harness.send(owner, #"{"op":"declare","ch":"inst.\#(count - n)"}"#) }
        _ = harness.frames(owner)
        #expect(harness.request(owner, #"{"op":"remove","all":true}"#)["count"] as? Int == count)
        #expect(harness.broker.instances.count == 0, "ownership goes at once")
        var passes = 0
        while harness.broker.hasDeferredWork && passes < 100 {
            harness.broker.continueDeferredWork()
            passes += 1
        }
        #expect(passes == (count - Broker.inlineRemovals + Broker.removalSlice - 1) / Broker.removalSlice,
                "the rest goes a slice per pass")
        let removed = harness.frames(watcher).compactMap { ($0["data"] as? [String: Any])?["ch"] as? String }
        #expect(removed == (0..<count).map { "inst.\(count - $0)" })
        #expect(harness.broker.instances.count == 0)
        #expect(harness.broker.directory.count == harness.broker.reservedChannelCount, "only the daemon's $sys channels stay")
        #expect(harness.broker.clientChannelCount == 0)
    }

    /// Lock answers list at most `maxListLimit` subscriptions and say so; the lock still
    /// covers every subscription it matches.
    @Test func lockAnswerIsCappedAndSaysTruncatedWhileTheLockCoversEverything() {
        let harness = BrokerHarness()
        let holder = harness.connect()
        let count = Broker.maxListLimit + 200
        for n in 0..<count { harness.send(holder, #"{"op":"sub","ch":"t.\#(n)","sub":"s\#(n)"}"#) }
        _ = harness.frames(holder)
        let locker = harness.connect()
        let answer = harness.request(locker, #"{"op":"lock","ch":"t.*"}"#)
        #expect((answer["subs"] as? [String])?.count == Broker.maxListLimit)
        #expect(answer["truncated"] as? Bool == true)
        let publisher = harness.connect()
        harness.send(publisher, #"{"op":"pub","ch":"t.\#(count - 1)"}"#)
        #expect(harness.frames(holder).isEmpty, "the lock covers subscriptions past the listed ones")
        let small = harness.request(locker, #"{"op":"lock","ch":"t.5"}"#)
        #expect(small["subs"] as? [String] == ["c1/s5"] && small["truncated"] == nil)
    }

    /// Issue 32, item 1: a lock on `c.*.x` beside many `c.N.*` subscriptions it may not list
    /// looks at no more than `listScan` of their patterns (it used to walk every one, 124–212 ms
    /// per lock with 100,000, without yielding), says the list was cut, and still covers them.
    @Test func aWildcardLockLooksAtNoMoreThanItsScanBudgetOfOverlappingPatterns() {
        let harness = BrokerHarness(authConfig([
            user("holder", token: "h", publish: rule(allow: ["c.>"]), subscribe: rule(allow: ["c.>"])),
            user("locker", token: "l", publish: rule(allow: ["c.>"]), subscribe: rule(allow: ["c.*.x"])),
        ]))
        harness.broker.budgets.listScan = 100
        let holder = harness.connect(token: "h")
        for n in 0..<1_000 { harness.send(holder, #"{"op":"sub","ch":"c.\#(n).*","sub":"s\#(n)"}"#) }
        _ = harness.frames(holder)
        let locker = harness.connect(token: "l")
        let answer = harness.request(locker, #"{"op":"lock","ch":"c.*.x"}"#)
        #expect(answer["ok"] as? String == "lock")
        #expect((answer["subs"] as? [String])?.isEmpty == true, "the locker may list none of them")
        #expect(answer["truncated"] as? Bool == true, "the walk stopped at its budget and says so")
        let publisher = harness.connect(token: "h")
        harness.send(publisher, #"{"op":"pub","ch":"c.999.x"}"#)
        #expect(harness.frames(holder).isEmpty, "the lock covers the subscriptions it did not look at")
    }

    /// The attacker's setup from issue 12: alice may subscribe `app.>` minus `app.secret.>`.
    private func aliceAndAdmin() -> (BrokerHarness, alice: Session, admin: Session) {
        let harness = BrokerHarness(authConfig([
            user("alice", token: "a", publish: rule(allow: ["app.>"]), subscribe: rule(allow: ["app.>"], deny: ["app.secret.>"])),
            user("admin", token: "root"),
        ]))
        return (harness, harness.connect(token: "a"), harness.connect(token: "root"))
    }

    @Test func lockAnswersListOnlySubscriptionsTheCallerMaySubscribeTo() {
        let (harness, alice, admin) = aliceAndAdmin()
        harness.subscribe(admin, #""ch":"app.secret.plans","sub":"hidden""#)
        harness.subscribe(admin, #""ch":"app.open","sub":"shown""#)
        harness.subscribe(admin, #""ch":">","sub":"everything""#)
        let lock = harness.request(alice, #"{"op":"lock","ch":"app.>"}"#)
        #expect(lock["subs"] as? [String] == ["c2/shown"], "\(lock)")
        let locks = harness.request(alice, #"{"op":"locks","ch":"app.open"}"#)
        let listed = (locks["locked"] as? [String] ?? []) + (locks["unlocked"] as? [String] ?? [])
        #expect(listed == ["c2/shown"], "\(locks)")
    }

    @Test func channelsHidesLinkTargetsAndOwnersTheViewerMayNotSee() {
        let (harness, alice, admin) = aliceAndAdmin()
        _ = harness.request(admin, #"{"op":"link","ch":"app.menu","parent":"app.secret.root"}"#)
        _ = harness.request(admin, #"{"op":"declare","ch":"app.doc"}"#)
        _ = harness.request(alice, #"{"op":"declare","ch":"app.mine"}"#)
        let seen = harness.request(alice, #"{"op":"channels","ch":"app.*"}"#)
        let entries = Dictionary(uniqueKeysWithValues: (seen["channels"] as? [[String: Any]] ?? []).map { ($0["ch"] as? String ?? "", $0) })
        #expect(entries["app.menu"]?["link"] == nil, "\(seen)")
        #expect(entries["app.doc"]?["owner"] is NSNull && entries["app.doc"]?["owned"] as? Bool == true)
        #expect(entries["app.mine"]?["owner"] as? String == "c1", "a user sees its own connections")
        let adminView = harness.request(admin, #"{"op":"channels","ch":"app.*"}"#)
        let adminEntries = (adminView["channels"] as? [[String: Any]] ?? [])
        #expect(adminEntries.first { $0["ch"] as? String == "app.menu" }?["link"] as? String == "app.secret.root")
        #expect(adminEntries.first { $0["ch"] as? String == "app.doc" }?["owner"] as? String == "c2")
    }

    @Test func reloadThatTakesPublishAwayReleasesLocksLinksAndDeclaredChannels() {
        let (harness, alice, admin) = aliceAndAdmin()
        harness.subscribe(admin, #""ch":"app.feed","sub":"feed""#)
        _ = harness.request(alice, #"{"op":"lock","ch":"app.feed"}"#)
        _ = harness.request(alice, #"{"op":"lock","ch":"app.alice.x"}"#)
        _ = harness.request(alice, #"{"op":"link","ch":"app.a","parent":"app.b"}"#)
        _ = harness.request(alice, #"{"op":"link","ch":"app.alice.a","parent":"app.alice.root"}"#)
        _ = harness.request(alice, #"{"op":"declare","ch":"app.room"}"#)
        _ = harness.request(alice, #"{"op":"declare","ch":"app.alice.room"}"#)
        harness.broker.config = authConfig([
            user("alice", token: "a", publish: rule(allow: ["app.alice.>"]), subscribe: rule(allow: ["app.>"])),
            user("admin", token: "root"),
        ])
        harness.broker.applyAuthSettings(now: 1)
        _ = harness.frames(alice)
        #expect(harness.broker.locks.owned(by: alice.id).compactMap { $0.pattern.map { String(decoding: $0, as: UTF8.self) } } == ["app.alice.x"])
        #expect(harness.broker.links.keys.map { String(decoding: $0, as: UTF8.self) } == ["app.alice.a"])
        #expect(harness.broker.instances.owned(by: alice.id).map { String(decoding: $0, as: UTF8.self) } == ["app.alice.room"])
        let publisher = harness.connect(token: "root")
        harness.send(publisher, #"{"op":"pub","ch":"app.feed","data":1}"#)
        #expect(harness.frames(admin).contains { $0["event"] as? String == "app.feed" }, "the released lock no longer holds")
    }

    /// Removal swaps the last subscription into the freed slot; deliveries still follow
    /// subscription order, and a group still reaches every remaining member.
    @Test func removingSubscriptionsInAnyOrderKeepsDeliveryInSubscriptionOrder() {
        let harness = BrokerHarness()
        let s = harness.connect()
        for n in 0..<20 { harness.subscribe(s, #""ch":"o.x","sub":"s\#(n)""#) }
        for n in [0, 7, 3, 19, 12] { _ = harness.request(s, #"{"op":"unsub","sub":"s\#(n)"}"#) }
        harness.send(s, #"{"op":"pub","ch":"o.x"}"#)
        let order = harness.frames(s).compactMap { $0["sub"] as? String }
        #expect(order == [1, 2, 4, 5, 6, 8, 9, 10, 11, 13, 14, 15, 16, 17, 18].map { "s\($0)" })
        let members = (0..<6).map { _ in harness.connect() }
        for (n, member) in members.enumerated() { harness.subscribe(member, #""ch":"g.x","group":"w","sub":"m\#(n)""#) }
        _ = harness.request(members[1], #"{"op":"unsub","sub":"m1"}"#)
        _ = harness.request(members[4], #"{"op":"unsub","sub":"m4"}"#)
        for _ in 0..<8 { harness.send(s, #"{"op":"pub","ch":"g.x"}"#) }
        let counts = members.map { harness.frames($0).count }
        #expect(counts[1] == 0 && counts[4] == 0)
        let remaining: [Int] = [counts[0], counts[2], counts[3], counts[5]]
        #expect(remaining == [2, 2, 2, 2], "\(counts)")
    }
}

/// Signals are indexed by sender and by the connection holding their offer, so a departing
/// connection releases its own without walking every signal; nothing is left behind.
@Suite struct SignalIndexTests {
    @Test func departingSendersAndHandlersLeaveNoIndexEntries() {
        let harness = BrokerHarness()
        let handler = harness.connect()
        let other = harness.connect()
        harness.subscribe(handler, #""ch":"ui.>","handle":true,"sub":"h""#)
        harness.subscribe(other, #""ch":"ui","handle":true,"sub":"up""#)
        let senders = (0..<5).map { _ in harness.connect() }
        for (n, sender) in senders.enumerated() {
            harness.send(sender, #"{"op":"signal","ch":"ui.screen\#(n)","timeout_ms":60000}"#)
        }
        #expect(harness.broker.offersHeld[handler.id]?.count == 5)
        harness.broker.disconnect(senders[0])
        #expect(harness.broker.signals.count == 4 && harness.broker.signalsBySender[senders[0].id] == nil)
        harness.broker.disconnect(handler)
        #expect(harness.broker.offersHeld[handler.id] == nil)
        #expect(harness.broker.offersHeld[other.id]?.count == 4, "each offer moved on to the next level's handler")
        for sender in senders.dropFirst() { harness.broker.disconnect(sender) }
        harness.broker.disconnect(other)
        #expect(harness.broker.signals.isEmpty && harness.broker.signalsBySender.isEmpty && harness.broker.offersHeld.isEmpty)
    }
}

/// Teardown in slices (`Broker+Teardown.swift`): big teardowns finish over loop passes,
/// small ones at once, and what a later request made is never torn down by an old one.
@Suite struct TeardownSliceTests {
    @Test func aChannelDeclaredAgainBeforeItsQueuedRemovalKeepsItsNewOwnerAndSubscribers() {
        let harness = BrokerHarness()
        let owner = harness.connect()
        let count = Broker.inlineRemovals + 10
        for n in 0..<count { harness.send(owner, #"{"op":"declare","ch":"d.\#(n)"}"#) }
        _ = harness.frames(owner)
        let last = "d.\(count - 1)"
        harness.broker.disconnect(owner)
        #expect(harness.broker.hasDeferredWork)
        let heir = harness.connect()
        #expect(harness.request(heir, #"{"op":"declare","ch":"\#(last)"}"#)["ok"] as? String == "declare")
        harness.subscribe(heir, #""ch":"\#(last)","sub":"mine""#)
        while harness.broker.hasDeferredWork { harness.broker.continueDeferredWork() }
        #expect(harness.frames(heir).isEmpty, "no removed frame for the new owner's channel")
        #expect(harness.broker.instances.count == 1)
        #expect(harness.broker.clientChannelCount == 1)
    }

    @Test func aMillionLocksWorthOfReleaseIsSlicedAndEndsWithNothingHeld() {
        let harness = BrokerHarness()
        let locker = harness.connect()
        let count = Broker.inlineLockReleases + Broker.lockReleaseSlice + 500
        var lines = ""
        for n in 0..<count { lines += #"{"op":"lock","ch":"l.\#(n)"}"# + "\n" }
        for line in lines.split(separator: "\n") { harness.send(locker, String(line)) }
        _ = harness.frames(locker)
        #expect(harness.broker.locks.count == count)
        harness.broker.disconnect(locker)
        #expect(harness.broker.locks.count == Broker.lockReleaseSlice + 500, "the first slice goes at once")
        harness.broker.continueDeferredWork()
        #expect(harness.broker.locks.count == 500, "then a slice per pass")
        harness.broker.continueDeferredWork()
        #expect(harness.broker.locks.count == 0 && !harness.broker.hasDeferredWork)
    }
}

@Suite struct PassBudgetTests {
    @Test func deferredRemovalsStopWhenThePassClockSaysSoAndResumeWhereTheyStopped() {
        let harness = BrokerHarness()
        let owner = harness.connect()
        let count = Broker.inlineRemovals + 1_000
        for n in 0..<count { harness.send(owner, #"{"op":"declare","ch":"t.\#(n)"}"#) }
        _ = harness.frames(owner)
        harness.broker.disconnect(owner)
        var asked = 0
        harness.broker.continueDeferredWork(isOverBudget: {
            asked += 1
            return true
        })
        #expect(asked >= 1)
        let left = harness.broker.clientChannelCount
        #expect(left == 1_000 - (Broker.itemsPerClockRead - 1), "stops at the first look at the clock")
        while harness.broker.hasDeferredWork { harness.broker.continueDeferredWork() }
        #expect(harness.broker.clientChannelCount == 0 && harness.broker.instances.count == 0)
    }

    @Test func lockReleasesStopWhenThePassClockSaysSo() {
        let harness = BrokerHarness()
        let locker = harness.connect()
        let count = Broker.inlineLockReleases + 1_000
        for n in 0..<count { harness.send(locker, #"{"op":"lock","ch":"l.\#(n)"}"#) }
        _ = harness.frames(locker)
        harness.broker.disconnect(locker)
        harness.broker.continueDeferredWork(isOverBudget: { true })
        #expect(harness.broker.locks.count == 1_000 - Broker.itemsPerClockRead)
        while harness.broker.hasDeferredWork { harness.broker.continueDeferredWork() }
        #expect(harness.broker.locks.count == 0)
    }

    @Test func theChannelSweepStopsAtThePassClockAndVisitsEveryRecordOverLaterTicks() {
        var config = BrokerConfig(epoch: "e")
        config.history = 0
        let harness = BrokerHarness(config)
        let publisher = harness.connect()
        let count = 1_000
        for n in 0..<count { harness.send(publisher, #"{"op":"pub","ch":"idle.\#(n)"}"#) }
        #expect(harness.broker.clientChannelCount == count)
        harness.broker.sweepChannelRecords(isOverBudget: { true })
        let first = count - harness.broker.clientChannelCount
        #expect(first <= Broker.itemsPerClockRead - 1, "stopped at the first look at the clock")
        var ticks = 1
        while harness.broker.clientChannelCount > 0 && ticks < 100 {
            harness.broker.sweepChannelRecords(isOverBudget: { true })
            ticks += 1
        }
        #expect(harness.broker.clientChannelCount == 0, "the cursor goes on where it stopped")
        #expect(ticks >= count / (Broker.itemsPerClockRead - 1))
    }
}

@Suite struct ShardedTableTests {
    @Test func aShardedSetHoldsEachElementOnceAndHandsItsShardsOver() {
        var set = ShardedSet<Int>()
        var inserted = 0
        for n in 0..<10_000 where set.insert(n) { inserted += 1 }
        let again = set.insert(42)
        #expect(inserted == 10_000 && !again && set.count == 10_000)
        let removed = set.remove(42)
        let removedAgain = set.remove(42)
        #expect(removed && !removedAgain && !set.contains(42) && set.contains(43))
        #expect(Set(set.elements) == Set((0..<10_000).filter { $0 != 42 }))
        let shards = set.takeShards()
        let elements = set.elements
        #expect(shards.count > 1 && shards.reduce(0) { $0 + $1.count } == 9_999)
        #expect(set.isEmpty && elements.isEmpty)
    }

    @Test func largeShardsGrowAtPointsSpreadOverTheOctave() {
        let capacity = 12_288
        let points = (0..<64).map { shard in
            (capacity / 2...capacity).first { ShardGrowth.isDue(count: $0, capacity: capacity, shard: shard) } ?? -1
        }
        #expect(points.allSatisfy { $0 > capacity / 2 && $0 <= capacity })
        #expect(Set(points).count == 64, "every shard at a count of its own")
        #expect(points == points.sorted())
        #expect(!ShardGrowth.isDue(count: 800, capacity: 800, shard: 0), "small shards grow only when full")
    }

    @Test func aNameTableGrowingPastTheStaggerPointsKeepsEveryName() {
        var table = NameTable<Int>()
        let count = 200_000
        for n in 0..<count { table[Array("n.\(n)".utf8)] = n }
        #expect(table.count == count)
        #expect((0..<count).allSatisfy { table[Array("n.\($0)".utf8)] == $0 })
        var dropped = 0
        while table.count > 0 && dropped < 100 {
            table.dropOneShard()
            dropped += 1
        }
        #expect(dropped == 64 && table.isEmpty)
    }
}
