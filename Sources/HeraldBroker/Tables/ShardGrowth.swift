/// When a shard of a `NameTable` or `ShardedSet` grows ahead of Swift's own doubling.
///
/// Shards filled evenly reach their capacity at about the same total count, and each
/// reaching it rehashes all its entries, so one doubling of the whole table fell on a run of
/// consecutive inserts (64 rehashes of 12,000 names: 3.5 ms each, 200 ms in a row, issue
/// 12). Shard `i` of 64 grows once its count passes `(64 + i) / 128` of its capacity, so the
/// shards' rehashes spread evenly over the octave between half and all of their capacity,
/// and keep that spread after every doubling. Small shards grow as usual (their rehash is
/// cheap, and growing early would only waste memory).
enum ShardGrowth {
    /// Shards below this capacity grow only when full.
    static let smallCapacity = 1_024

    /// Whether shard `shard` (0..<64) holding `count` of `capacity` should grow now.
    static func isDue(count: Int, capacity: Int, shard: Int) -> Bool {
        capacity >= smallCapacity && count * 128 > capacity * (64 + shard)
    }
}
