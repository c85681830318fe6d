@testable import HeraldServer
import Testing

/// The sentinels' notices a node acts on (issue 31): only the watched master's, read from
/// the payloads Redis Sentinel 7 publishes.
struct SentinelWatchTests {
    private let old = RedisAddress(host: "127.0.0.1", port: 6379)
    private let new = RedisAddress(host: "127.0.0.1", port: 6380)

    @Test func aSwitchOfTheWatchedMasterNamesBothPrimaries() {
        #expect(SentinelWatch.notice(channel: "+switch-master", payload: "herald 127.0.0.1 6379 127.0.0.1 6380", master: "herald")
                == .switched(from: old, to: new))
        #expect(SentinelWatch.notice(channel: "+switch-master", payload: "other 127.0.0.1 6379 127.0.0.1 6380", master: "herald") == nil)
        #expect(SentinelWatch.notice(channel: "+switch-master", payload: "herald 127.0.0.1 x 127.0.0.1 6380", master: "herald") == nil)
    }

    @Test func aPromotionUnderWayNamesThePrimaryAboutToBeReplaced() {
        let payload = "slave 127.0.0.1:6380 127.0.0.1 6380 @ herald 127.0.0.1 6379"
        #expect(SentinelWatch.notice(channel: "+failover-state-send-slaveof-noone", payload: payload, master: "herald")
                == .promoting(primary: old))
        #expect(SentinelWatch.notice(channel: "+failover-state-send-slaveof-noone", payload: payload, master: "else") == nil)
    }

    @Test func anAbortOfTheWatchedMasterLiftsTheFence() {
        #expect(SentinelWatch.notice(channel: "-failover-abort-slave-timeout", payload: "master herald 127.0.0.1 6379", master: "herald") == .aborted)
        #expect(SentinelWatch.notice(channel: "-failover-abort-not-elected", payload: "master other 127.0.0.1 6379", master: "herald") == nil)
    }
}

/// Fail-stop's bookkeeping (issue 31): what a liveness refresh's answer means.
struct IncarnationStateTests {
    private let second: UInt64 = 1_000_000_000

    @Test func aNodeWhoseLastConfirmedRefreshIsOlderThanTheTimeoutHoldsUntilAFreshOneConfirms() {
        var state = IncarnationState()
        state.registered(at: 10 * second)
        #expect(!state.mayHaveLapsed(now: 11 * second, timeoutNs: 2 * second))
        #expect(state.mayHaveLapsed(now: 15 * second, timeoutNs: 2 * second), "a 5 s stall")
        state.hold([])
        #expect(state.refreshAnswered(sentAt: 11 * second, present: true, now: 15 * second, timeoutNs: 2 * second) == .probeAgain,
                "an answer sent before the stall does not clear the doubt")
        #expect(state.refreshAnswered(sentAt: 15 * second, present: true, now: 15 * second, timeoutNs: 2 * second) == .release)
    }

    @Test func aKeyFoundGoneAfterRegisteringResetsButNotBeforeOrDuringAnOutage() {
        var state = IncarnationState()
        state.registered(at: 10 * second)
        #expect(state.refreshAnswered(sentAt: 9 * second, present: false, now: 11 * second, timeoutNs: 2 * second) == .none,
                "a refresh sent before the registration says nothing")
        state.linkLost()
        #expect(state.refreshAnswered(sentAt: 12 * second, present: false, now: 12 * second, timeoutNs: 2 * second) == .none,
                "after an outage the reaper's {p}dead judges, through rejoin")
        state.registered(at: 13 * second)
        #expect(state.refreshAnswered(sentAt: 14 * second, present: false, now: 14 * second, timeoutNs: 2 * second) == .reset)
        let began = state.beginReset("lapsed")
        let again = state.beginReset("again")
        #expect(began && !again, "one reset at a time")
        #expect(state.refreshAnswered(sentAt: 15 * second, present: false, now: 15 * second, timeoutNs: 2 * second) == .none)
    }

    /// The chaos run: after a Sentinel move, a refresh sent on the control link after the
    /// `rejoin` on the command link ran in Redis before it, found the key expired, and every
    /// node reset at once. Only refreshes sent after `rejoin`'s answer are verdicts; the key's
    /// life still counts from the send.
    @Test func aRefreshSentBeforeRejoinAnsweredIsNoVerdict() {
        var state = IncarnationState()
        state.registered(at: 1 * second)
        state.linkLost()
        state.registered(sentAt: 10 * second, answeredAt: 12 * second)
        #expect(state.refreshAnswered(sentAt: 11 * second, present: false, now: 12 * second, timeoutNs: 5 * second) == .none,
                "sent after the rejoin but before its answer: it may have run first")
        #expect(state.confirmedAt == 10 * second, "the key lives from the rejoin's send")
        #expect(state.refreshAnswered(sentAt: 12 * second, present: false, now: 12 * second, timeoutNs: 5 * second) == .reset)
    }

    @Test func joiningAgainBacksOffUpToFiveSeconds() {
        var state = IncarnationState()
        _ = state.beginReset("x")
        for _ in 0..<10 { state.joinFailed(now: 0) }
        #expect(state.nextJoinAt == 5 * second)
        state.endReset(registeredAt: 20 * second)
        #expect(!state.isResetting && state.announcesOnReady)
    }
}

/// The indexes a node saw confirmed gone (issue 31): late messages under them are ignored,
/// and the list stays bounded however many incarnations a long-lived cluster goes through.
struct GoneNodesTests {
    @Test func remembersTheMostRecentGoneIndexesUpToItsCapacity() {
        var gone = GoneNodes(capacity: 3)
        for index in 1...10 { gone.insert(index) }
        gone.insert(10)
        #expect(gone.count == 3)
        #expect(!gone.contains(7) && gone.contains(8) && gone.contains(9) && gone.contains(10))
    }

    @Test func tenTimesTheCapacityOfIndexesCostsTheCapacity() {
        var gone = GoneNodes(capacity: 4_096)
        for index in 0..<40_960 { gone.insert(index) }
        #expect(gone.count == 4_096 && gone.contains(40_959) && !gone.contains(36_863))
    }
}
