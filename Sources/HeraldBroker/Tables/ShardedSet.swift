/// A set split into 64 shards, so growing it never rehashes more than a 64th of its
/// elements at once, and dropping it can be done a shard at a time.
///
/// Why: Swift's `Set` doubles and rehashes every element in one go. Ten connections taking
/// 100,000 locks each grew their sets at the same moment and held the loop about 100 ms
/// (issue 12, `scripts/fault abuse` at full size); split 64 ways, each growth moves at most
/// a 64th. The shard comes from the top bits of the element's hash, so the bits each shard's
/// own buckets use stay spread, and a large shard grows early at a point of its own
/// (`ShardGrowth`). Same idea as `NameTable`, for elements that are not names.
struct ShardedSet<Element: Hashable> {
    private static var shardCount: Int { 64 }
    private var shards: [Set<Element>] = Array(repeating: [], count: 64)
    /// How many elements it holds.
    private(set) var count = 0

    /// Whether it holds nothing.
    var isEmpty: Bool { count == 0 }

    private static func shard(of element: Element) -> Int {
        Int(truncatingIfNeeded: UInt(bitPattern: element.hashValue) >> (UInt.bitWidth - 6))
    }

    /// Whether `element` is held.
    func contains(_ element: Element) -> Bool {
        shards[Self.shard(of: element)].contains(element)
    }

    /// Inserts `element`. - Returns: false when it was already there.
    @discardableResult
    mutating func insert(_ element: Element) -> Bool {
        let shard = Self.shard(of: element)
        guard shards[shard].insert(element).inserted else { return false }
        count += 1
        if ShardGrowth.isDue(count: shards[shard].count, capacity: shards[shard].capacity, shard: shard) {
            shards[shard].reserveCapacity(shards[shard].capacity + 1)
        }
        return true
    }

    /// The element held that equals `element` (for an element type whose equality is a key's,
    /// such as `PatternSlots`' probes), or nil.
    func member(equalTo element: Element) -> Element? {
        let shard = shards[Self.shard(of: element)]
        guard let at = shard.firstIndex(of: element) else { return nil }
        return shard[at]
    }

    /// Stores `element`, replacing an equal one. - Returns: the one it replaced, or nil.
    @discardableResult
    mutating func update(with element: Element) -> Element? {
        let shard = Self.shard(of: element)
        guard let replaced = shards[shard].update(with: element) else {
            count += 1
            if ShardGrowth.isDue(count: shards[shard].count, capacity: shards[shard].capacity, shard: shard) {
                shards[shard].reserveCapacity(shards[shard].capacity + 1)
            }
            return nil
        }
        return replaced
    }

    /// Removes the element equal to `element`. - Returns: the one removed, or nil.
    @discardableResult
    mutating func removeMember(equalTo element: Element) -> Element? {
        guard let removed = shards[Self.shard(of: element)].remove(element) else { return nil }
        count -= 1
        return removed
    }

    /// Removes `element`. - Returns: false when it was not there.
    @discardableResult
    mutating func remove(_ element: Element) -> Bool {
        guard shards[Self.shard(of: element)].remove(element) != nil else { return false }
        count -= 1
        return true
    }

    /// Every element, in no particular order.
    var elements: [Element] { shards.flatMap { $0 } }

    /// Takes the shards out, leaving the set empty, for a caller that works through them a
    /// piece at a time and frees each shard once done (`DetachedLocks`).
    mutating func takeShards() -> [Set<Element>] {
        count = 0
        let taken = shards.filter { !$0.isEmpty }
        shards = Array(repeating: [], count: Self.shardCount)
        return taken
    }
}
