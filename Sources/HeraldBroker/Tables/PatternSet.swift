import HeraldWire

/// A multiset of channel patterns that answers "does any of them match this channel?" in
/// time proportional to the channel's segments, not to how many patterns it holds.
///
/// Concrete patterns are one dictionary lookup, wildcard patterns a `PatternTrie` walk, and
/// `nil` (every channel) a counter. Used by `LockTable`, so a user holding a million locks
/// costs another user's publish nothing (issue 12: every publish used to scan every lock).
struct PatternSet {
    private var concrete = NameTable<Int>()
    private let wildcards = PatternTrie<Int>()
    private var everything = 0
    /// How many patterns are held, counting repeats.
    private(set) var count = 0

    /// Whether it holds nothing.
    var isEmpty: Bool { count == 0 }

    /// Adds one occurrence of `pattern` (nil: every channel).
    mutating func insert(_ pattern: [UInt8]?) {
        count += 1
        guard let pattern else {
            everything += 1
            return
        }
        if Self.isWildcard(pattern) {
            wildcards.insert((wildcards.value(at: pattern) ?? 0) + 1, at: pattern)
        } else {
            concrete[pattern] = (concrete[pattern] ?? 0) + 1
        }
    }

    /// Removes one occurrence of `pattern`; nothing when it is not held.
    mutating func remove(_ pattern: [UInt8]?) {
        guard let pattern else {
            guard everything > 0 else { return }
            everything -= 1
            count -= 1
            return
        }
        if Self.isWildcard(pattern) {
            guard let held = wildcards.value(at: pattern) else { return }
            if held > 1 { wildcards.insert(held - 1, at: pattern) } else { wildcards.removeValue(at: pattern) }
        } else {
            guard let held = concrete[pattern] else { return }
            concrete[pattern] = held > 1 ? held - 1 : nil
        }
        count -= 1
    }

    /// Whether some held pattern matches the concrete channel `name`.
    func matches(_ name: [UInt8]) -> Bool {
        if everything > 0 || concrete[name] != nil { return true }
        var found = false
        wildcards.forEachMatch(of: name) { pattern, _ in
            if !found && ChannelName.matches(pattern: pattern, channel: name) { found = true }
        }
        return found
    }

    /// Whether a valid pattern holds a `*` or `>` segment.
    static func isWildcard(_ pattern: [UInt8]) -> Bool {
        ChannelName.segments(pattern).contains { range in
            range.count == 1 && (pattern[range.lowerBound] == UInt8(ascii: "*") || pattern[range.lowerBound] == UInt8(ascii: ">"))
        }
    }
}
