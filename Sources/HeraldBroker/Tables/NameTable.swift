/// A dictionary by channel name split into 64 shards, so growing it never rehashes more
/// than a 64th of its entries at once.
///
/// Why: Swift's `Dictionary` doubles and rehashes every entry in one go, so the op that
/// made a table of a million locks or five million channel names pass a power of two held
/// the loop for hundreds of milliseconds (issue 12, `scripts/fault abuse` at full size).
/// Split 64 ways, each growth moves at most a 64th of the names. A name is hashed once
/// (`NameHash`, keyed per process): the top 6 bits pick the shard, the low bits the slot
/// in it (`NameTableShard`, open addressing). A lookup by bytes (`subscript(bytes:)`) needs
/// no array: the publish path looks its channel up straight from the request line.
///
/// Shards filled evenly would all pass a power of two together, so a large shard grows a
/// little early, at a point of its own between half and all of its capacity
/// (`ShardGrowth`): the 64 rehashes of one doubling then fall on 64 different inserts
/// spread over the octave, rather than on a run of consecutive ones (at 800,000 names that
/// run cost 3.5 ms per insert for 200 ms).
struct NameTable<Value> {
    private static var shardCount: Int { 64 }
    private var shards = [NameTableShard<Value>](repeating: NameTableShard(), count: 64)
    /// How many names it holds.
    private(set) var count = 0

    /// Whether it holds nothing.
    var isEmpty: Bool { count == 0 }

    /// The shard of a name hashed to `hash`.
    @inline(__always)
    private static func shard(of hash: UInt64) -> Int { Int(truncatingIfNeeded: hash >> 58) }

    /// The value for the name in `bytes`.
    subscript(bytes bytes: UnsafeRawBufferPointer) -> Value? {
        let hash = NameHash.processWide.hash(bytes)
        // Through a pointer: the shard read in place, not copied out (a copy retains its slots).
        return shards.withUnsafeBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return nil }
            return (base + Self.shard(of: hash)).pointee.lookup(bytes, hash: hash)
        }
    }

    /// Look-ahead (`PublishLookahead`): hints the home slot of a name hashed to `hash`.
    @inline(__always)
    func prefetchSlot(hash: UInt64) {
        shards.withUnsafeBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return }
            (base + Self.shard(of: hash)).pointee.prefetchHome(hash)
        }
    }

    /// Look-ahead: hints the object stored under a name hashed to `hash`.
    @inline(__always)
    func prefetchValue(hash: UInt64) {
        shards.withUnsafeBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return }
            (base + Self.shard(of: hash)).pointee.prefetchValue(hash)
        }
    }

    /// The value for `name`; setting nil removes it.
    subscript(name: [UInt8]) -> Value? {
        get { name.withUnsafeBytes { self[bytes: $0] } }
        set {
            guard let newValue else {
                removeValue(forKey: name)
                return
            }
            name.withUnsafeBytes { bytes in
                let hash = NameHash.processWide.hash(bytes)
                let shard = Self.shard(of: hash)
                let placed = shards[shard].placement(hash, bytes)
                if let index = shards[shard].find(bytes, hash: placed) {
                    _ = shards[shard].replace(at: index, with: newValue)
                    return
                }
                let due = ShardGrowth.isDue(count: shards[shard].count + 1, capacity: shards[shard].capacity, shard: shard)
                shards[shard].insert(name, hash: hash, value: newValue, growNow: due)
                count += 1
            }
        }
    }

    /// Removes `name`. - Returns: its value, when it was there.
    @discardableResult
    mutating func removeValue(forKey name: [UInt8]) -> Value? {
        name.withUnsafeBytes { bytes in
            let hash = NameHash.processWide.hash(bytes)
            let shard = Self.shard(of: hash)
            guard let index = shards[shard].find(bytes, hash: shards[shard].placement(hash, bytes)) else { return nil }
            count -= 1
            return shards[shard].remove(at: index)
        }
    }

    /// Empties the last shard that holds anything (freeing its entries), for an owner that
    /// drops a large table a 64th at a time.
    mutating func dropOneShard() {
        guard let last = shards.lastIndex(where: { $0.count > 0 }) else { return }
        count -= shards[last].count
        shards[last] = NameTableShard()
    }

    /// How many times a shard took secrets of its own because names collided (a flood).
    var reseeds: Int { shards.reduce(0) { $0 + $1.reseeds } }

    /// Every name, in no particular order.
    var keys: [[UInt8]] { shards.flatMap { $0.entries.map(\.name) } }

    /// Every value, in no particular order.
    var values: [Value] { shards.flatMap { $0.entries.map(\.value) } }
}

extension NameTable: Sequence {
    /// Iterates `(key, value)` pairs shard by shard.
    func makeIterator() -> AnyIterator<(key: [UInt8], value: Value)> {
        var shardIndex = 0
        var inner = shards.first?.entries.makeIterator()
        let shards = self.shards
        return AnyIterator {
            while true {
                if let next = inner?.next() { return (next.name, next.value) }
                shardIndex += 1
                guard shardIndex < shards.count else { return nil }
                inner = shards[shardIndex].entries.makeIterator()
            }
        }
    }
}
