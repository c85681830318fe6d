import Foundation
import Testing
import HeraldBroker

/// `lock`, `unlock`, `locks` (PROTOCOL.md, "Locking").
@Suite struct LockTests {
    /// Publishes on `ch` with a rid and returns the receipt's `receivers`.
    private func receivers(_ harness: BrokerHarness, _ publisher: Session, _ channel: String) -> Int? {
        harness.send(publisher, #"{"op":"pub","ch":"\#(channel)","rid":"r"}"#)
        return harness.frames(publisher).first { $0["ok"] as? String == "pub" }?["receivers"] as? Int
    }

    @Test func lockedSubscriptionStaysRegisteredAndMissedEventsAreNotQueued() {
        let harness = BrokerHarness()
        let s = harness.connect()
        let p = harness.connect()
        harness.subscribe(s, #""ch":"cars.42","sub":"car""#)
        let ok = harness.request(s, #"{"op":"lock","sub":"car","rid":1}"#)
        #expect(ok["ok"] as? String == "lock")
        #expect(ok["subs"] as? [String] == ["c1/car"])
        #expect(receivers(harness, p, "cars.42") == 0)
        #expect(harness.frames(s).isEmpty)
        let subs = harness.request(s, #"{"op":"subs"}"#)["subs"] as? [[String: Any]] ?? []
        #expect(subs.compactMap { $0["sub"] as? String } == ["car"])
        let unlocked = harness.request(s, #"{"op":"unlock","sub":"car"}"#)
        #expect(unlocked["released"] as? Int == 1)
        #expect(receivers(harness, p, "cars.42") == 1)
        let events = harness.frames(s)
        #expect(events.count == 1, "the event published while locked is skipped, not queued")
        #expect(events.first?["seq"] as? Int == 2)
    }

    @Test func channelLockSilencesExactAndWildcardSubscriptionsOnlyOnThatChannel() {
        let harness = BrokerHarness()
        let exact = harness.connect()
        let wild = harness.connect()
        let locker = harness.connect()
        harness.subscribe(exact, #""ch":"cars.42""#)
        harness.subscribe(wild, #""ch":"cars.*""#)
        let ok = harness.request(locker, #"{"op":"lock","ch":"cars.42"}"#)
        #expect(ok["subs"] as? [String] == ["c1/s1", "c2/s1"])
        #expect(receivers(harness, locker, "cars.42") == 0)
        #expect(receivers(harness, locker, "cars.43") == 1, "a wildcard subscription still gets other channels")
        #expect(harness.frames(exact).isEmpty)
        #expect(harness.frames(wild).compactMap { $0["event"] as? String } == ["cars.43"])
    }

    @Test func patternLockCoversSubscriptionsMadeWhileItHolds() {
        let harness = BrokerHarness()
        let locker = harness.connect()
        let late = harness.connect()
        _ = harness.request(locker, #"{"op":"lock","ch":"cars.>"}"#)
        harness.subscribe(late, #""ch":"cars.7""#)
        harness.subscribe(late, #""ch":">""#)
        #expect(receivers(harness, locker, "cars.7") == 0)
        #expect(receivers(harness, locker, "boats.1") == 1)
        _ = harness.request(locker, #"{"op":"unlock","ch":"cars.>"}"#)
        #expect(receivers(harness, locker, "cars.7") == 2)
    }

    @Test func lockWithSubsSilencesOnlyTheListedSubscriptions() {
        let harness = BrokerHarness()
        let a = harness.connect()
        let b = harness.connect()
        let locker = harness.connect()
        harness.subscribe(a, #""ch":"t","sub":"x""#)
        harness.subscribe(b, #""ch":"t","sub":"x""#)
        harness.subscribe(b, #""ch":"u","sub":"y""#)
        let ok = harness.request(locker, #"{"op":"lock","ch":"t","subs":["c2/x","c2/y"]}"#)
        #expect(ok["subs"] as? [String] == ["c2/x", "c2/y"])
        #expect(receivers(harness, locker, "t") == 1)
        #expect(harness.frames(a).count == 1)
        #expect(harness.frames(b).isEmpty)
        #expect(receivers(harness, locker, "u") == 1, "the lock covers only channels matching its 'ch'")
    }

    @Test func lockedQueueGroupMemberIsSkippedForAnUnlockedOne() {
        let harness = BrokerHarness()
        let m1 = harness.connect()
        let m2 = harness.connect()
        let p = harness.connect()
        harness.subscribe(m1, #""ch":"work","group":"g","sub":"w""#)
        harness.subscribe(m2, #""ch":"work","group":"g","sub":"w""#)
        _ = harness.request(m1, #"{"op":"lock","sub":"w"}"#)
        for _ in 0..<4 { #expect(receivers(harness, p, "work") == 1) }
        #expect(harness.frames(m1).isEmpty)
        #expect(harness.frames(m2).count == 4)
        _ = harness.request(m2, #"{"op":"lock","sub":"w"}"#)
        #expect(receivers(harness, p, "work") == 0, "a group whose members are all locked receives nothing")
    }

    @Test func lockBySubSurvivesResubscribeWithTheSameName() {
        let harness = BrokerHarness()
        let s = harness.connect()
        let p = harness.connect()
        harness.subscribe(s, #""ch":"a","sub":"n""#)
        _ = harness.request(s, #"{"op":"lock","sub":"n"}"#)
        harness.subscribe(s, #""ch":"b","sub":"n""#)
        #expect(receivers(harness, p, "b") == 0, "the lock names c1/n, so the replacement is locked too")
        _ = harness.request(s, #"{"op":"unlock","sub":"n"}"#)
        #expect(receivers(harness, p, "b") == 1)
    }

    @Test func lockerDisconnectReleasesItsLocks() {
        let harness = BrokerHarness()
        let s = harness.connect()
        let locker = harness.connect()
        let p = harness.connect()
        harness.subscribe(s, #""ch":"a""#)
        _ = harness.request(locker, #"{"op":"lock","ch":"a"}"#)
        _ = harness.request(locker, #"{"op":"lock","ch":"a","subs":["c1/s1"]}"#)
        #expect(receivers(harness, p, "a") == 0)
        harness.broker.disconnect(locker)
        #expect(receivers(harness, p, "a") == 1)
        #expect(harness.request(p, #"{"op":"stats"}"#)["locks"] as? Int == 0)
    }

    @Test func locksOfTwoConnectionsAreIndependent() {
        let harness = BrokerHarness()
        let s = harness.connect()
        let first = harness.connect()
        let second = harness.connect()
        harness.subscribe(s, #""ch":"a""#)
        _ = harness.request(first, #"{"op":"lock","ch":"a","subs":["c1/s1"]}"#)
        _ = harness.request(second, #"{"op":"lock","ch":"a","subs":["c1/s1"]}"#)
        _ = harness.request(first, #"{"op":"unlock","ch":"a","subs":["c1/s1"]}"#)
        #expect(receivers(harness, s, "a") == 0, "still locked by the second connection")
        _ = harness.request(second, #"{"op":"unlock","ch":"a","subs":["c1/s1"]}"#)
        #expect(receivers(harness, s, "a") == 1)
    }

    @Test func lockingTwiceIsOneLockAndUnlockOfNothingReleasesNothing() {
        let harness = BrokerHarness()
        let s = harness.connect()
        harness.subscribe(s, #""ch":"a""#)
        _ = harness.request(s, #"{"op":"lock","ch":"a"}"#)
        _ = harness.request(s, #"{"op":"lock","ch":"a"}"#)
        #expect(harness.request(s, #"{"op":"unlock","ch":"a"}"#)["released"] as? Int == 1)
        #expect(harness.request(s, #"{"op":"unlock","ch":"a"}"#)["released"] as? Int == 0)
        #expect(receivers(harness, s, "a") == 1)
    }

    @Test func locksSplitsMatchingSubscriptionsIntoLockedAndUnlocked() {
        let harness = BrokerHarness()
        let a = harness.connect()
        let b = harness.connect()
        harness.subscribe(a, #""ch":"x.y","sub":"e""#)
        harness.subscribe(b, #""ch":"x.*","sub":"w""#)
        harness.subscribe(b, #""ch":"x.y","group":"g","sub":"g1""#)
        harness.subscribe(a, #""ch":"z","sub":"other""#)
        _ = harness.request(a, #"{"op":"lock","ch":"x.y","subs":["c2/w"]}"#)
        let answer = harness.request(a, #"{"op":"locks","ch":"x.y","rid":9}"#)
        #expect(answer["ok"] as? String == "locks")
        #expect(answer["ch"] as? String == "x.y")
        #expect(answer["locked"] as? [String] == ["c2/w"])
        #expect(answer["unlocked"] as? [String] == ["c1/e", "c2/g1"])
        #expect(answer["rid"] as? Int == 9)
    }

    @Test func patternLockReportsSubscriptionsWhosePatternsOverlap() {
        let harness = BrokerHarness()
        let s = harness.connect()
        harness.subscribe(s, #""ch":"cars.*.moved","sub":"a""#)
        harness.subscribe(s, #""ch":"boats.>","sub":"b""#)
        harness.subscribe(s, #""ch":">","sub":"c""#)
        let ok = harness.request(s, #"{"op":"lock","ch":"cars.>"}"#)
        #expect(ok["ch"] as? String == "cars.>")
        #expect(ok["subs"] as? [String] == ["c1/a", "c1/c"])
    }

    @Test(arguments: [
        (#"{"op":"lock","sub":"missing"}"#, "not_found"),
        (#"{"op":"lock"}"#, "missing_field"),
        (#"{"op":"lock","ch":"a..b"}"#, "bad_channel"),
        (#"{"op":"lock","ch":"$sys.>"}"#, "forbidden"),
        (#"{"op":"lock","ch":"a","subs":["nope"]}"#, "bad_field"),
        (#"{"op":"lock","ch":"a","subs":[1]}"#, "bad_field"),
        (#"{"op":"lock","ch":"a","subs":"c1/x"}"#, "bad_field"),
        (#"{"op":"lock","ch":"a","sub":"x"}"#, "bad_field"),
        (#"{"op":"locks","ch":"a.*"}"#, "bad_channel"),
        (#"{"op":"locks"}"#, "missing_field"),
    ])
    func badLockRequestsAreRefused(line: String, code: String) {
        let harness = BrokerHarness()
        let s = harness.connect()
        let answer = harness.request(s, line)
        #expect(answer["error"] as? String == code, "\(line) -> \(answer)")
    }

    @Test func unlockingOwnSubscriptionThatIsGoneIsFine() {
        let harness = BrokerHarness()
        let s = harness.connect()
        let answer = harness.request(s, #"{"op":"unlock","sub":"never"}"#)
        #expect(answer["ok"] as? String == "unlock")
        #expect(answer["released"] as? Int == 0)
    }
}
