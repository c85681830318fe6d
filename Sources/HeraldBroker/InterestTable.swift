import HeraldWire

/// Which nodes of a cluster have subscribers on which patterns (docs/cluster.md,
/// "Interest"): the routing table a node consults to send each event only to the nodes that
/// want it. Patterns are kept in a `PatternTrie` (wildcards) and a `NameTable` (concrete
/// channels), so a lookup costs the channel's segments, as the local index does.
///
/// Each (node, pattern) entry remembers the interest version of its last change, so a
/// snapshot loaded at version V and the change messages around it can be applied in any
/// order: a change older than what the entry holds is ignored. Entries stay after their
/// last holder leaves (they keep that version); forgetting a departed node's entries is part
/// of issue 15 (node failures).
public final class InterestTable {
    /// The nodes (by index) holding a pattern, with the version of each one's last change;
    /// a removal keeps its version (as a negative entry) so a late, older add is refused.
    private final class Holders {
        var versions: [Int: Int] = [:]
        var present: Set<Int> = []
    }

    private var concrete = NameTable<Holders>()
    private let wildcards = PatternTrie<Holders>()

    /// An empty table.
    public init() {}

    /// Applies "node `node` has (or, `added` false, no longer has) interest in `pattern`"
    /// at interest version `version`. - Returns: false when a newer change was already applied.
    @discardableResult
    public func apply(node: Int, pattern: [UInt8], added: Bool, version: Int) -> Bool {
        let holders = holders(for: pattern)
        if let seen = holders.versions[node], seen >= version { return false }
        holders.versions[node] = version
        if added { holders.present.insert(node) } else { holders.present.remove(node) }
        return true
    }

    /// The nodes with a pattern matching the concrete channel `name`, in ascending order.
    public func nodes(for name: [UInt8]) -> [Int] {
        var found = Set<Int>()
        if let holders = concrete[name] { found.formUnion(holders.present) }
        wildcards.forEachMatch(of: name) { pattern, holders in
            if ChannelName.matches(pattern: pattern, channel: name) { found.formUnion(holders.present) }
        }
        return found.sorted()
    }

    private func holders(for pattern: [UInt8]) -> Holders {
        if PatternSet.isWildcard(pattern) {
            if let known = wildcards.value(at: pattern) { return known }
            let made = Holders()
            wildcards.insert(made, at: pattern)
            return made
        }
        if let known = concrete[pattern] { return known }
        let made = Holders()
        concrete[pattern] = made
        return made
    }
}
