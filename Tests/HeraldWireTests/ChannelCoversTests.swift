import Testing
import HeraldWire

/// `covers(outer, inner)`: every channel `inner` can match is matched by `outer`. It decides
/// what a user may subscribe to, so it is checked against a table AND against brute force.
@Test(arguments: [
    ("a.>", "a.*", true), ("a.>", "a.>", true), ("a.>", "a.b.c", true), ("a.>", "a", false),
    (">", "a", true), (">", "*.*.>", true), (">", ">", true), ("*", "*", true), ("*", "a", true),
    ("*", ">", false), ("*", "a.b", false), ("a.*", "a.>", false), ("a.*", "a.*", true),
    ("a.*", "a.b", true), ("a.b", "a.*", false), ("a.b", "a.b", true), ("a.b", "a.c", false),
    ("*.b", "a.b", true), ("*.b", "*.b", true), ("a.b", "*.b", false), ("*.*", "a.>", false),
    ("a.*.c", "a.b.c", true), ("a.*.c", "a.*.*", false), ("a.*.>", "a.b.>", true), ("a.*.>", "a.>", false),
    (">", "$sys.x", false), ("*.x", "$sys.x", false), (">", "$sys.>", false), ("$sys.>", "$sys.>", true),
    ("$sys.>", "$sys.client.*", true), ("$sys.*", "$sys.>", false), ("$sys.>", "$sys", false),
    (">", "*", true), (">", "*.x", true), ("abc", "ab", false), ("ab", "abc", false),
])
func coversIsExact(outer: String, inner: String, expected: Bool) {
    #expect(ChannelName.covers(Array(outer.utf8), Array(inner.utf8)) == expected, "\(outer) ⊇ \(inner)")
}

/// Every pattern over a small alphabet against every channel of a small universe: covers and
/// overlaps must agree with what `matches` says channel by channel.
@Test func coversAndOverlapsAgreeWithBruteForce() {
    let patterns = makePatterns()
    let universe = makeChannels()
    let matchSets: [[Bool]] = patterns.map { pattern in universe.map { ChannelName.matches(pattern: pattern, channel: $0) } }
    var checked = 0
    for (i, outer) in patterns.enumerated() {
        for (j, inner) in patterns.enumerated() {
            let covered = zip(matchSets[j], matchSets[i]).allSatisfy { innerMatches, outerMatches in !innerMatches || outerMatches }
            let shared = zip(matchSets[j], matchSets[i]).contains { $0 && $1 }
            #expect(ChannelName.covers(outer, inner) == covered,
                    "covers(\(String(decoding: outer, as: UTF8.self)), \(String(decoding: inner, as: UTF8.self)))")
            #expect(ChannelName.overlaps(outer, inner) == shared,
                    "overlaps(\(String(decoding: outer, as: UTF8.self)), \(String(decoding: inner, as: UTF8.self)))")
            checked += 1
        }
    }
    #expect(checked > 4_000, "every pair of 69 patterns")
}

/// Patterns of 1 to 3 segments from `a`, `b`, `*`, a final `>`, and `$s` first.
private func makePatterns() -> [[UInt8]] {
    var result: [[String]] = []
    func extend(_ prefix: [String]) {
        if !prefix.isEmpty { result.append(prefix) }
        guard prefix.count < 3, prefix.last != ">" else { return }
        var choices = ["a", "b", "*", ">"]
        if prefix.isEmpty { choices.append("$s") }
        for choice in choices { extend(prefix + [choice]) }
    }
    extend([])
    return result.map { Array($0.joined(separator: ".").utf8) }
}

/// Channels of 1 to 4 segments from `a`, `b`, `c` (which no pattern names), and `$s` first:
/// one segment longer than any pattern, so a `>` always has a channel to tell it apart.
private func makeChannels() -> [[UInt8]] {
    var result: [[String]] = []
    func extend(_ prefix: [String]) {
        if !prefix.isEmpty { result.append(prefix) }
        guard prefix.count < 4 else { return }
        var choices = ["a", "b", "c"]
        if prefix.isEmpty { choices.append("$s") }
        for choice in choices { extend(prefix + [choice]) }
    }
    extend([])
    return result.map { Array($0.joined(separator: ".").utf8) }
}
