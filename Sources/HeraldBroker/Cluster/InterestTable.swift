import HeraldWire

/// Which nodes of a cluster have subscribers on which patterns (docs/cluster.md,
/// "Interest"): the routing table a node consults to send each event only to the nodes that
/// want it. Patterns are kept in a `PatternTrie` (wildcards) and a `NameTable` (concrete
/// channels), so a lookup costs the channel's segments, as the local index does.
///
/// A queue group's membership is an entry `PATTERN GROUP` (a space between: patterns hold
/// none): `nodes(for:)` leaves groups out, `groups(for:)` lists the groups a channel reaches
/// (the publish script picks the member node from the counts kept in Redis).
///
/// Each (node, pattern) entry remembers the interest version of its last change, so a
/// snapshot loaded at version V and the change messages around it can be applied in any
/// order: a change older than what the entry holds is ignored. While a snapshot may still
/// meet older changes (the node is not ready), a removal keeps its version, until that node
/// is forgotten (`forget`: it left or was declared down); once the node is ready, changes
/// arrive in order on one channel, so a removal forgets the entry at once (`dropsRemoved`),
/// and the pattern or group goes when nobody holds it (issue 32: 40,000 group names churned
/// on one node left 20–24 MiB on each other node).
public final class InterestTable {
    /// The nodes (by index) holding a pattern, with the version of each one's last change;
    /// a removal keeps its version (as a negative entry) so a late, older add is refused.
    private final class Holders {
        var versions: [Int: Int] = [:]
        var present: Set<Int> = []
        /// The pattern's queue groups, by name, with the nodes holding members of each.
        var groups: [[UInt8]: Holders] = [:]
    }

    private var concrete = NameTable<Holders>()
    private let wildcards = PatternTrie<Holders>()

    /// An empty table.
    public init() {}

    /// Applies "node `node` has (or, `added` false, no longer has) interest in `pattern`"
    /// at interest version `version`; with `dropsRemoved`, a removal forgets the entry (and
    /// the pattern or group nobody else has an entry for) instead of keeping its version.
    /// - Returns: false when a newer change was already applied.
    @discardableResult
    public func apply(node: Int, pattern: [UInt8], added: Bool, version: Int, dropsRemoved: Bool = false) -> Bool {
        let holders: Holders
        var owner: (holders: Holders, pattern: [UInt8], group: [UInt8])?
        if let (plain, group) = Self.groupEntry(pattern) {
            let plainHolders = self.holders(for: plain)
            holders = plainHolders.groups[group] ?? Holders()
            plainHolders.groups[group] = holders
            owner = (plainHolders, plain, group)
        } else {
            holders = self.holders(for: pattern)
        }
        if let seen = holders.versions[node], seen >= version { return false }
        holders.versions[node] = version
        if added { holders.present.insert(node) } else { holders.present.remove(node) }
        if !added && dropsRemoved {
            holders.versions[node] = nil
            guard let owner else {
                if holders.versions.isEmpty && holders.groups.isEmpty { removeEntry(pattern) }
                return true
            }
            if holders.versions.isEmpty { owner.holders.groups[owner.group] = nil }
            if owner.holders.versions.isEmpty && owner.holders.groups.isEmpty { removeEntry(owner.pattern) }
        }
        return true
    }

    /// Removes a pattern nobody has an entry for.
    private func removeEntry(_ pattern: [UInt8]) {
        if PatternSet.isWildcard(pattern) {
            _ = wildcards.removeValue(at: pattern)
        } else {
            concrete.removeValue(forKey: pattern)
        }
    }

    /// The nodes with a pattern matching the concrete channel `name`, in ascending order;
    /// with `includingGroups`, also those holding members of a queue group on such a pattern.
    public func nodes(for name: [UInt8], includingGroups: Bool = false) -> [Int] {
        var found = Set<Int>()
        func collect(_ holders: Holders) {
            found.formUnion(holders.present)
            if includingGroups { for members in holders.groups.values { found.formUnion(members.present) } }
        }
        if let holders = concrete[name] { collect(holders) }
        wildcards.forEachMatch(of: name) { pattern, holders in
            if ChannelName.matches(pattern: pattern, channel: name) { collect(holders) }
        }
        return found.sorted()
    }

    /// The queue groups (as `PATTERN GROUP` entries, what the publish script takes) on
    /// patterns matching `name` that some node holds members of.
    public func groups(for name: [UInt8]) -> [[UInt8]] {
        var found: [[UInt8]] = []
        func collect(_ pattern: [UInt8], _ holders: Holders) {
            for (group, members) in holders.groups where !members.present.isEmpty {
                found.append(pattern + [32] + group)
            }
        }
        if let holders = concrete[name], !holders.groups.isEmpty { collect(name, holders) }
        wildcards.forEachMatch(of: name) { pattern, holders in
            if !holders.groups.isEmpty, ChannelName.matches(pattern: pattern, channel: name) { collect(pattern, holders) }
        }
        return found
    }

    /// Forgets a node that left or was declared down: its entries go, and so do patterns
    /// and groups no other node has an entry for. Costs the table's size; runs once per
    /// node failure or departure, never per event. A node index is never reused, except by
    /// the same node registering again after an outage, whose new changes carry newer
    /// versions (or, from a Redis whose versions went back, follow `forgetVersions`).
    public func forget(node: Int) {
        var emptyConcrete: [[UInt8]] = []
        for (name, holders) in concrete where Self.forget(node, in: holders) { emptyConcrete.append(name) }
        for name in emptyConcrete { concrete.removeValue(forKey: name) }
        var emptyPatterns: [[UInt8]] = []
        wildcards.forEachValue { pattern, holders in
            if Self.forget(node, in: holders) { emptyPatterns.append(pattern) }
        }
        for pattern in emptyPatterns { _ = wildcards.removeValue(at: pattern) }
    }

    /// Forgets the version of every entry, keeping who holds what: for a Redis whose
    /// versions went back (it came back without its data, or a replica behind its primary
    /// took over), where a remembered version would refuse the new changes up to it. Costs
    /// the table's size; runs at most once per reconnect to Redis.
    public func forgetVersions() {
        for (_, holders) in concrete { Self.forgetVersions(in: holders) }
        wildcards.forEachValue { _, holders in Self.forgetVersions(in: holders) }
    }

    private static func forgetVersions(in holders: Holders) {
        for node in holders.versions.keys { holders.versions[node] = forgottenVersion }
        for members in holders.groups.values { forgetVersions(in: members) }
    }

    /// The version of an entry whose version was forgotten: below any change's.
    static let forgottenVersion = -1

    /// How many patterns the table holds an entry for (concrete and wildcard).
    public var entryCount: Int {
        var wildcardCount = 0
        wildcards.forEachValue { _, _ in wildcardCount += 1 }
        return concrete.count + wildcardCount
    }

    /// Removes `node` from a pattern's holders and its groups. - Returns: whether nothing is
    /// left of the pattern.
    private static func forget(_ node: Int, in holders: Holders) -> Bool {
        holders.versions[node] = nil
        holders.present.remove(node)
        for (group, members) in holders.groups {
            members.versions[node] = nil
            members.present.remove(node)
            if members.versions.isEmpty { holders.groups[group] = nil }
        }
        return holders.versions.isEmpty && holders.groups.isEmpty
    }

    /// Splits a group entry `PATTERN GROUP` (patterns hold no space; a group name may).
    /// - Returns: nil for a plain pattern.
    static func groupEntry(_ entry: [UInt8]) -> (pattern: [UInt8], group: [UInt8])? {
        guard let space = entry.firstIndex(of: 32) else { return nil }
        return (Array(entry[..<space]), Array(entry[(space + 1)...]))
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
