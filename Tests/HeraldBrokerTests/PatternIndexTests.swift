import Testing
@testable import HeraldBroker
import HeraldWire

/// The indexes behind issue 12's "every operation costs what it touches": each must give
/// exactly the answers of the brute-force definitions in `ChannelName`.
@Suite struct PatternIndexTests {
    /// Every name and pattern over a small alphabet, up to three segments.
    static let names: [[UInt8]] = {
        let segments = ["a", "b", "$s"]
        var result: [String] = segments
        for x in ["a", "b"] { for y in ["a", "b"] { result.append(x + "." + y); for z in ["a", "b"] { result.append(x + "." + y + "." + z) } } }
        result += ["$s.a", "$s.a.b"]
        return result.map { Array($0.utf8) }
    }()
    static let patterns: [[UInt8]] = {
        let segments = ["a", "b", "*"]
        var result: [String] = segments + [">", "$s", "$s.>", "$s.*"]
        for x in segments { for y in segments + [">"] { result.append(x + "." + y); for z in segments + [">"] where y != ">" { result.append(x + "." + y + "." + z) } } }
        return result.map { Array($0.utf8) }
    }()

    @Test func trieMatchesExactlyWhatChannelNameMatches() {
        let trie = PatternTrie<Int>()
        for (n, pattern) in Self.patterns.enumerated() { trie.insert(n, at: pattern) }
        for name in Self.names {
            var found: Set<Int> = []
            trie.forEachMatch(of: name) { pattern, value in
                if ChannelName.matches(pattern: pattern, channel: name) { found.insert(value) }
            }
            let expected = Set(Self.patterns.indices.filter { ChannelName.matches(pattern: Self.patterns[$0], channel: name) })
            #expect(found == expected, "\(String(decoding: name, as: UTF8.self))")
        }
    }

    @Test func trieOverlapsExactlyWhatChannelNameOverlaps() {
        let trie = PatternTrie<Int>()
        var stored = Self.patterns
        for name in Self.names where !stored.contains(name) { stored.append(name) }
        for (n, pattern) in stored.enumerated() { trie.insert(n, at: pattern) }
        for query in Self.patterns {
            var found: Set<Int> = []
            trie.forEachOverlap(with: query) { pattern, value in
                if ChannelName.overlaps(pattern, query) { found.insert(value) }
                return true
            }
            let expected = Set(stored.indices.filter { ChannelName.overlaps(stored[$0], query) })
            #expect(found == expected, "\(String(decoding: query, as: UTF8.self))")
        }
    }

    @Test func trieRemovalPrunesEveryNodeItMade() {
        let trie = PatternTrie<Int>()
        for (n, pattern) in Self.patterns.enumerated() { trie.insert(n, at: pattern) }
        for pattern in Self.patterns.reversed() { #expect(trie.removeValue(at: pattern) != nil) }
        #expect(trie.count == 0)
        var left = 0
        trie.forEachValue { _, _ in left += 1 }
        #expect(left == 0)
        #expect(trie.value(at: Array("a.b".utf8)) == nil)
    }

    @Test func patternSetCountsRepeatsAndMatchesLikeBruteForce() {
        var generator = SystemRandomNumberGenerator()
        var set = PatternSet()
        var held: [[UInt8]?] = []
        for _ in 0..<2_000 {
            if held.isEmpty || Bool.random(using: &generator) {
                let pattern: [UInt8]? = Int.random(in: 0..<20, using: &generator) == 0 ? nil : Self.patterns.randomElement(using: &generator)
                set.insert(pattern)
                held.append(pattern)
            } else {
                let at = Int.random(in: 0..<held.count, using: &generator)
                set.remove(held.remove(at: at))
            }
            let name = Self.names.randomElement(using: &generator) ?? []
            let expected = held.contains { $0.map { ChannelName.matches(pattern: $0, channel: name) } ?? true }
            #expect(set.matches(name) == expected)
            #expect(set.count == held.count)
        }
    }

    @Test func sortedNamesAgreeWithASortedArrayThroughInsertsRemovalsAndSeeks() {
        var generator = SystemRandomNumberGenerator()
        var list = SortedNames()
        var reference: Set<[UInt8]> = []
        for _ in 0..<20_000 {
            let name = Array("n.\(Int.random(in: 0..<3_000, using: &generator))".utf8)
            if Bool.random(using: &generator) {
                #expect(list.insert(name) == reference.insert(name).inserted)
            } else {
                #expect(list.remove(name) == (reference.remove(name) != nil))
            }
        }
        #expect(list.count == reference.count)
        let sorted = reference.sorted { SortedNames.compare($0, $1) < 0 }
        var all: [[UInt8]] = []
        list.forEach(from: [], excluding: false) { all.append($0); return true }
        #expect(all == sorted)
        for _ in 0..<50 {
            let start = Array("n.\(Int.random(in: 0..<3_000, using: &generator))".utf8)
            var seen: [[UInt8]] = []
            list.forEach(from: start, excluding: true) { seen.append($0); return seen.count < 10 }
            #expect(seen == Array(sorted.filter { SortedNames.compare($0, start) > 0 }.prefix(10)))
        }
    }
}
