import Foundation
import Testing
@testable import HeraldBroker
import HeraldWire

/// Issue 12, section 3: `user_limits.retained_bytes` and `user_limits.history_bytes`, summed
/// over a user's connections, charged to the user whose writes hold the bytes.
@Suite struct UserBytesTests {
    private func limited(_ limits: UserLimits, history: Int = 100) -> BrokerHarness {
        var config = authConfig([user("u", token: "u", limits: limits), user("o", token: "o")])
        config.history = history
        return BrokerHarness(config)
    }

    private func account(_ harness: BrokerHarness, _ name: String) -> UserAccount? {
        harness.broker.accounts[name]
    }

    /// `"value":"xx…"` whose JSON text is `bytes` long.
    private func text(_ bytes: Int) -> String {
        "\"" + String(repeating: "x", count: bytes - 2) + "\""
    }

    // MARK: - retained_bytes

    @Test func retainedBytesCountAcrossTheUsersConnectionsAndALimitChangesNothing() {
        let harness = limited(UserLimits(retainedBytes: 100))
        let a = harness.connect(token: "u")
        let b = harness.connect(token: "u")
        // Each channel costs its name (3) plus its value's JSON text.
        #expect(harness.request(a, #"{"op":"set","ch":"r.1","value":\#(text(60))}"#)["ok"] as? String == "set")
        #expect(account(harness, "u")?.retainedBytes == 63)
        let refused = harness.request(b, #"{"op":"set","ch":"r.2","value":\#(text(38))}"#)
        #expect(refused["error"] as? String == "limit", "63 + 41 passes 100 on the user's other connection")
        #expect((refused["message"] as? String)?.contains("user_limits.retained_bytes") == true)
        let unchanged = harness.request(b, #"{"op":"get","ch":"r.2"}"#)
        #expect(unchanged["rev"] as? Int == 0 && unchanged["value"] is NSNull, "a refused op changes nothing")
        #expect(harness.request(b, #"{"op":"append","ch":"r.1","value":1}"#)["error"] as? String == "type")
        #expect(harness.request(b, #"{"op":"set","ch":"r.2","value":\#(text(34))}"#)["ok"] as? String == "set", "exactly 100")
        #expect(account(harness, "u")?.retainedBytes == 100)
        #expect(harness.request(b, #"{"op":"append","ch":"r.3","value":1}"#)["error"] as? String == "limit")
        #expect(harness.request(a, #"{"op":"set","ch":"r.1","value":1}"#)["ok"] as? String == "set", "shrinking is fine")
        #expect(account(harness, "u")?.retainedBytes == 4 + 37)
        let other = harness.connect(token: "o")
        #expect(harness.request(other, #"{"op":"set","ch":"o.1","value":\#(text(200))}"#)["ok"] as? String == "set",
                "another user has its own share")
        #expect(harness.broker.store.retainedBytes == 4 + 37 + 203)
    }

    @Test func replacingAnotherUsersStateTakesItsChargeAndDeletingCreditsIt() {
        let harness = limited(UserLimits(retainedBytes: 100))
        let u = harness.connect(token: "u")
        let o = harness.connect(token: "o")
        #expect(harness.request(u, #"{"op":"set","ch":"r.1","value":\#(text(90))}"#)["ok"] as? String == "set")
        #expect(harness.request(u, #"{"op":"set","ch":"r.2","value":\#(text(10))}"#)["error"] as? String == "limit")
        #expect(harness.request(o, #"{"op":"set","ch":"r.1","value":\#(text(5))}"#)["ok"] as? String == "set")
        #expect(account(harness, "u")?.retainedBytes == 0, "the previous holder is credited")
        #expect(account(harness, "o")?.retainedBytes == 3 + 5, "the last writer holds the channel")
        #expect(harness.request(u, #"{"op":"set","ch":"r.2","value":\#(text(90))}"#)["ok"] as? String == "set")
        #expect(harness.request(u, #"{"op":"del","ch":"r.2"}"#)["ok"] as? String == "del")
        #expect(account(harness, "u")?.retainedBytes == 0, "a tombstone is charged to nobody")
        // Lists: the whole list is held by its last writer, as its JSON text.
        #expect(harness.request(u, #"{"op":"append","ch":"l.1","value":1}"#)["ok"] as? String == "append")
        #expect(harness.request(u, #"{"op":"append","ch":"l.1","value":22}"#)["ok"] as? String == "append")
        #expect(account(harness, "u")?.retainedBytes == 3 + 6)
        #expect(harness.request(o, #"{"op":"splice","ch":"l.1","index":0,"remove":1}"#)["ok"] as? String == "splice")
        #expect(account(harness, "u")?.retainedBytes == 0)
        #expect(account(harness, "o")?.retainedBytes == 8 + 3 + 4)
        harness.broker.disconnect(o)
        #expect(account(harness, "o")?.retainedBytes == 15, "the charge outlives the user's connections")
    }

    @Test func restoredStateIsChargedToNobodyUntilAUserWritesIt() {
        let harness = limited(UserLimits(retainedBytes: 100))
        let seed = StateStore()
        seed.apply(.set(channel: Array("r.0".utf8), rev: 4, value: Array(text(500).utf8)))
        harness.broker.restore(seed.entries)
        let u = harness.connect(token: "u")
        #expect(harness.request(u, #"{"op":"set","ch":"r.1","value":\#(text(90))}"#)["ok"] as? String == "set",
                "500 restored bytes are nobody's")
        #expect(account(harness, "u")?.retainedBytes == 93)
        #expect(harness.request(u, #"{"op":"set","ch":"r.0","value":\#(text(10))}"#)["error"] as? String == "limit",
                "writing it takes the whole channel over: 93 + 13 passes 100")
        #expect(harness.request(u, #"{"op":"set","ch":"r.0","value":1}"#)["ok"] as? String == "set")
        #expect(account(harness, "u")?.retainedBytes == 93 + 4)
    }

    @Test func withoutAuthNothingIsCharged() {
        let harness = BrokerHarness()
        let s = harness.connect()
        #expect(harness.request(s, #"{"op":"set","ch":"r.1","value":\#(text(5000))}"#)["ok"] as? String == "set")
        #expect(harness.broker.accounts.isEmpty && harness.broker.retainedHolders.count == 0)
    }

    // MARK: - history_bytes

    /// Bytes one event of `data` (`text(n)`) costs in history for a client id `cK` (one
    /// digit) at a one-digit `seq`: `,"seq":S,"from":"cK"` + `,"data":` + data + `}\n` + its
    /// record.
    private func eventCost(_ dataBytes: Int) -> Int { 20 + 8 + dataBytes + 2 + HistoryLog.entryCost }

    private func historySeqs(_ harness: BrokerHarness, _ name: String) -> [Int] {
        guard let channel = harness.broker.channels[Array(name.utf8)] else { return [] }
        return harness.broker.heldChain(of: channel).map { harness.broker.retention.log.record($0).seq }
    }

    @Test func pastItsHistoryBytesAUsersOldestEventsGoFirstAndOthersKeepTheirs() {
        #expect(HistoryLog.entryCost <= 56, "a record stays seven words")
        let cost = eventCost(200)
        let harness = limited(UserLimits(historyBytes: 3 * cost + 10))
        let u = harness.connect(token: "u")
        let o = harness.connect(token: "o")
        for name in ["h.a", "h.b", "h.a"] { harness.send(u, #"{"op":"pub","ch":"\#(name)","data":\#(text(200))}"#) }
        for _ in 0..<5 { harness.send(o, #"{"op":"pub","ch":"h.c","data":\#(text(200))}"#) }
        #expect(account(harness, "u")?.historyBytes == 3 * cost)
        harness.send(u, #"{"op":"pub","ch":"h.b","data":\#(text(200))}"#)
        #expect(historySeqs(harness, "h.a") == [2], "u's oldest event went, from the front of its channel")
        #expect(historySeqs(harness, "h.b") == [1, 2])
        #expect(historySeqs(harness, "h.c") == [1, 2, 3, 4, 5], "another user's history is not touched")
        #expect(account(harness, "u")?.historyBytes == 3 * cost)
        #expect(account(harness, "o")?.historyBytes == 5 * cost)
        #expect(harness.broker.heldHistoryBytes == 8 * cost, "the tombstoned event is not counted as held")
    }

    @Test func evictingAUsersEventTakesWhatItsChannelHoldsBeforeItSoHistoryStaysContiguous() {
        let cost = eventCost(200)
        let harness = limited(UserLimits(historyBytes: 3 * cost + 10))
        let u = harness.connect(token: "u")
        let o = harness.connect(token: "o")
        for k in 1...6 { harness.send(k % 2 == 1 ? o : u, #"{"op":"pub","ch":"h.s","data":\#(text(200))}"#) }
        harness.send(u, #"{"op":"pub","ch":"h.t","data":\#(text(200))}"#)
        #expect(historySeqs(harness, "h.s") == [3, 4, 5, 6], "o's seq 1 went with u's seq 2: no gap")
        #expect(account(harness, "o")?.historyBytes == 2 * cost, "o is credited for its evicted event")
        #expect(account(harness, "u")?.historyBytes == 3 * cost)
        let reader = harness.connect(token: "o")
        let answer = harness.request(reader, #"{"op":"sub","ch":"h.s","since":2}"#)
        #expect((answer["frames"] as? [[String: Any]])?.first?["recovered"] as? Bool == true)
        let replayed = (answer["frames"] as? [[String: Any]])?.dropFirst().compactMap { $0["seq"] as? Int }
        #expect(replayed == [3, 4, 5, 6])
    }

    @Test func eventsPastTheUsersLimitAreStillDeliveredLive() {
        let harness = limited(UserLimits(historyBytes: 50))
        let u = harness.connect(token: "u")
        let reader = harness.connect(token: "o")
        harness.subscribe(reader, #""ch":"h.x""#)
        harness.send(u, #"{"op":"pub","ch":"h.x","data":\#(text(200))}"#)
        #expect(harness.frames(reader).first?["seq"] as? Int == 1)
        #expect(historySeqs(harness, "h.x").isEmpty, "an event larger than the user's share is not kept")
        #expect(account(harness, "u")?.historyBytes == 0)
    }

    @Test func everyEvictionCreditsTheEventsOwnerAndBookkeepingStaysBounded() {
        let harness = limited(UserLimits(historyBytes: 1 << 20), history: 2)
        let u = harness.connect(token: "u")
        for _ in 0..<5 { harness.send(u, #"{"op":"pub","ch":"h.1","data":\#(text(10))}"#) }
        // The channel's count applies when reading: events past it keep their bytes in the log
        // until it wraps, and the user is charged for what its events hold.
        #expect(historySeqs(harness, "h.1") == [4, 5])
        #expect(account(harness, "u")?.historyEvents == 5)
        #expect(account(harness, "u")?.historyBytes == 5 * eventCost(10))
        for _ in 0..<20_000 { harness.send(u, #"{"op":"pub","ch":"h.1","data":1}"#) }
        let held = account(harness, "u")?.historyEvents ?? 0
        #expect((account(harness, "u")?.historyBytes ?? .max) <= 1 << 20, "the user's limit holds")
        let ledger = account(harness, "u")?.historyLedger.count ?? .max
        #expect(ledger <= 2 * held + 64 + 1, "entries for events already gone are compacted away: \(ledger)")
        // A dropped record (an instance channel removed) credits its whole history.
        harness.send(u, #"{"op":"declare","ch":"h.2"}"#)
        harness.send(u, #"{"op":"pub","ch":"h.2","data":1}"#)
        let withIt = account(harness, "u")?.historyEvents ?? 0
        harness.send(u, #"{"op":"remove","ch":"h.2"}"#)
        #expect(account(harness, "u")?.historyEvents == withIt - 1)
        harness.broker.disconnect(u)
        harness.broker.config.historyBytes = 2_000
        let other = harness.connect(token: "o")
        for _ in 0..<100 { harness.send(other, #"{"op":"pub","ch":"h.1","data":1}"#) }
        #expect(account(harness, "u")?.historyEvents == 0 && account(harness, "u")?.historyBytes == 0,
                "a disconnected user's events are credited as the log wraps past them")
    }

    @Test func theGlobalCapCreditsTheOwnersOfWhatItEvicts() {
        var config = authConfig([user("u", token: "u"), user("o", token: "o")])
        config.historyBytes = 4 * eventCost(100)
        let harness = BrokerHarness(config)
        let u = harness.connect(token: "u")
        let o = harness.connect(token: "o")
        harness.send(u, #"{"op":"pub","ch":"g.u","data":\#(text(100))}"#)
        for _ in 0..<4 { harness.send(o, #"{"op":"pub","ch":"g.o","data":\#(text(100))}"#) }
        #expect(account(harness, "u")?.historyBytes == 0)
        #expect(account(harness, "o")?.historyBytes == 4 * eventCost(100))
    }
}

/// Issue 12, section 3: whatever happens, the per-user charges add up to what is held.
@Suite struct UserBytesAccountingTests {
    @Test func chargesAlwaysAddUpToTheHistoryAndStateTheUsersHold() {
        var config = authConfig([user("u", token: "u", limits: UserLimits(retainedBytes: 300, historyBytes: 2_000)),
                                 user("o", token: "o", limits: UserLimits(retainedBytes: 500, historyBytes: 3_000))])
        config.history = 6
        config.historyBytes = 4_000
        let harness = BrokerHarness(config)
        var generator = SystemRandomNumberGenerator()
        var sessions = (0..<4).map { harness.connect(token: $0 % 2 == 0 ? "u" : "o") }
        for step in 0..<4_000 {
            let slot = Int.random(in: 0..<sessions.count, using: &generator)
            let s = sessions[slot]
            let ch = "a." + String(Int.random(in: 0..<6, using: &generator))
            let size = Int.random(in: 1...120, using: &generator)
            let data = "\"" + String(repeating: "d", count: size) + "\""
            switch Int.random(in: 0..<12, using: &generator) {
            case 0...3: harness.send(s, #"{"op":"pub","ch":"\#(ch)","data":\#(data)}"#)
            case 4: harness.send(s, #"{"op":"set","ch":"\#(ch)","value":\#(data)}"#)
            case 5: harness.send(s, #"{"op":"append","ch":"\#(ch)","value":\#(data)}"#)
            case 6: harness.send(s, #"{"op":"splice","ch":"\#(ch)","index":0,"remove":1}"#)
            case 7: harness.send(s, #"{"op":"del","ch":"\#(ch)"}"#)
            case 8: harness.send(s, #"{"op":"sub","ch":"\#(ch)","sub":"x"}"#)
            case 9: harness.send(s, #"{"op":"declare","ch":"\#(ch)"}"#)
            case 10: harness.send(s, #"{"op":"remove","all":true}"#)
            default:
                if step % 3 == 0 {
                    harness.broker.disconnect(s)
                    sessions[slot] = harness.connect(token: slot % 2 == 0 ? "u" : "o")
                } else {
                    harness.now += 1_000
                    _ = harness.broker.tick(now: harness.now)
                }
            }
            for session in sessions { _ = harness.lines(session) }
            check(harness, step: step)
        }
    }

    private func check(_ harness: BrokerHarness, step: Int) {
        let broker = harness.broker
        let accounts = Array(broker.accounts.values)
        var history = 0
        let log = broker.retention.log
        for number in log.first..<log.end where log.isLive(number) && log.record(number).owner >= 0 {
            history += Int(log.record(number).length) + HistoryLog.entryCost
        }
        let charged = accounts.reduce(0) { $0 + $1.historyBytes }
        #expect(charged == history, "step \(step): history charges \(charged) vs held \(history)")
        for account in accounts {
            let limit = account.name == "u" ? 2_000 : 3_000
            #expect(account.historyBytes <= limit, "step \(step): \(account.name) holds \(account.historyBytes) of history")
            #expect(account.retainedBytes <= (account.name == "u" ? 300 : 500), "step \(step): \(account.name) retained")
        }
        var held: [ObjectIdentifier: Int] = [:]
        var holdings = 0
        for (name, state) in broker.store.entries {
            guard let holding = broker.retainedHolders.holding(of: name) else { continue }
            #expect(state.hasContent && holding.bytes == name.count + state.contentBytes, "step \(step): stale holding")
            held[ObjectIdentifier(holding.account), default: 0] += holding.bytes
            holdings += 1
        }
        #expect(holdings == broker.retainedHolders.count, "step \(step): a holding outlived its state")
        for account in accounts {
            #expect(account.retainedBytes == held[ObjectIdentifier(account)] ?? 0, "step \(step): \(account.name) retained")
        }
    }
}
