@testable import HeraldBroker
import HeraldWire
import Testing

/// Subscription names are packed into a word when they are 7 bytes or shorter and kept in
/// the subscription's extras when longer; the session's table finds, replaces and removes
/// them by name either way, and the index finds subscriptions by pattern without a key of
/// its own (docs/architecture.md, "Memory per subscription").
@Suite struct SubscriptionNameTests {
    @Test func everyNameLengthRoundTripsThroughThePackedWord() {
        for length in 1...PackedName.capacity {
            for fill: UInt8 in [0, 0x22, 0x7F, 0xFF] {
                let name = (0..<length).map { UInt8(truncatingIfNeeded: Int(fill) &+ $0) }
                let word = PackedName.word(name)
                #expect(word != 0)
                #expect(PackedName.count(word) == length)
                #expect(PackedName.bytes(word) == name)
            }
        }
        #expect(PackedName.word([]) == 0)
        #expect(PackedName.word(Array(repeating: 0x61, count: PackedName.capacity + 1)) == 0)
    }

    @Test func namesThatDifferOnlyInLengthOrTrailingZeroBytesPackApart() {
        let words = [[0x61], [0x61, 0], [0x61, 0, 0], [0, 0x61], [0]].map { PackedName.word($0) }
        #expect(Set(words).count == words.count)
    }

    @Test func shortAndLongNamesAreFoundReplacedAndRemovedByName() {
        let harness = BrokerHarness()
        let s = harness.connect()
        let names = ["a", "s1", "seven77", "eight888", "a.much.longer.subscription.name", "\u{0}", "é"]
        for (k, name) in names.enumerated() {
            let answer = harness.subscribe(s, #""ch":"x.\#(k)","sub":"\#(json(name))""#)
            #expect(answer["sub"] as? String == name)
        }
        // Replacing by name moves it: the old channel no longer reaches it.
        for (k, name) in names.enumerated() {
            harness.subscribe(s, #""ch":"y.\#(k)","sub":"\#(json(name))""#)
        }
        harness.frames(s).forEach { _ in }
        for k in names.indices {
            harness.send(s, #"{"op":"pub","ch":"x.\#(k)","data":0}"#)
            harness.send(s, #"{"op":"pub","ch":"y.\#(k)","data":\#(k)}"#)
        }
        let events = harness.frames(s).filter { $0["event"] != nil }
        #expect(events.map { $0["sub"] as? String } == names.map { Optional($0) })
        #expect(events.map { $0["data"] as? Int } == names.indices.map { Optional($0) })
        for name in names {
            let answer = harness.request(s, #"{"op":"unsub","sub":"\#(json(name))"}"#)
            #expect(answer["count"] as? Int == 1, "unsub \(name)")
        }
        #expect(harness.request(s, #"{"op":"stats"}"#)["subscriptions"] as? Int == 0)
    }

    @Test func aSessionHoldsManyNamesAndFindsEachOfThem() {
        var table = SessionSubscriptions()
        let harness = BrokerHarness()
        let session = harness.connect()
        let names = (0..<20_000).map { k -> [UInt8] in
            Array((k % 3 == 0 ? "long.name.\(k)" : "s\(k)").utf8)
        }
        for (k, name) in names.enumerated() {
            table[name] = Subscription(session: session, name: name, pattern: Array("c.\(k)".utf8), isWildcard: false,
                                       group: nil, args: nil, max: nil, serial: k)
        }
        #expect(table.count == names.count)
        for (k, name) in names.enumerated() { #expect(table[name]?.serial == k) }
        #expect(table[Array("s20000".utf8)] == nil)
        for name in names where name.count <= PackedName.capacity { table[name] = nil }
        #expect(table.count == names.filter { $0.count > PackedName.capacity }.count)
        #expect(table.values.allSatisfy { $0.name.count > PackedName.capacity })
    }

    @Test func theIndexFindsEachPatternAmongManyAndForgetsRemovedOnes() {
        var slots = PatternSlots()
        let harness = BrokerHarness()
        let session = harness.connect()
        var held: [Subscription] = []
        for k in 0..<20_000 {
            let pattern = Array("bench.s.\(k)".utf8)
            let subscription = Subscription(session: session, name: Array("s\(k)".utf8), pattern: pattern,
                                            isWildcard: false, group: nil, args: nil, max: nil, serial: k)
            held.append(subscription)
            slots[pattern] = .one(subscription)
        }
        #expect(slots.count == held.count)
        for subscription in held {
            guard case .one(let found)? = slots[subscription.pattern] else {
                Issue.record("missing \(subscription.pattern)")
                continue
            }
            #expect(found === subscription)
        }
        for subscription in held where subscription.serial % 2 == 0 { slots[subscription.pattern] = nil }
        #expect(slots.count == held.count / 2)
        #expect(slots[held[0].pattern] == nil)
        #expect(Set(slots.keys.map { String(decoding: $0, as: UTF8.self) }).count == held.count / 2)
    }

    private func json(_ name: String) -> String {
        var out: [UInt8] = []
        out.appendJSONString(Array(name.utf8))
        return String(decoding: out.dropFirst().dropLast(), as: UTF8.self)
    }
}
