/// A dictionary by channel name split into 64 shards, so growing it never rehashes more
/// than a 64th of its entries at once.
///
/// Why: Swift's `Dictionary` doubles and rehashes every entry in one go, so the op that
/// made a table of a million locks or five million channel names pass a power of two held
/// the loop for hundreds of milliseconds (issue 12, `scripts/fault abuse` at full size).
/// Split 64 ways, each growth moves at most a 64th of the names. Keys are hashed with one
/// `combine(bytes:)` (`ChannelKey`) rather than byte by byte, and the shard is picked with
/// FNV-1a over the same bytes.
///
/// Shards filled evenly would all pass a power of two together, so a large shard grows a
/// little early, at a point of its own between half and all of its capacity
/// (`ShardGrowth`): the 64 rehashes of one doubling then fall on 64 different inserts
/// spread over the octave, rather than on a run of consecutive ones (at 800,000 names that
/// run cost 3.5 ms per insert for 200 ms).
struct NameTable<Value> {
    private static var shardCount: Int { 64 }
    private var shards: [[ChannelKey: Value]] = Array(repeating: [:], count: 64)
    /// How many names it holds.
    private(set) var count = 0

    /// Whether it holds nothing.
    var isEmpty: Bool { count == 0 }

    private static func shard(of name: [UInt8]) -> Int {
        var hash: UInt32 = 2_166_136_261
        for byte in name { hash = (hash ^ UInt32(byte)) &* 16_777_619 }
        return Int(hash & UInt32(shardCount - 1))
    }

    /// The value for `name`; setting nil removes it.
    subscript(name: [UInt8]) -> Value? {
        get { shards[Self.shard(of: name)][ChannelKey(name)] }
        set {
            let shard = Self.shard(of: name)
            let key = ChannelKey(name)
            if let newValue {
                if shards[shard].updateValue(newValue, forKey: key) == nil {
                    count += 1
                    if ShardGrowth.isDue(count: shards[shard].count, capacity: shards[shard].capacity, shard: shard) {
                        shards[shard].reserveCapacity(shards[shard].capacity + 1)
                    }
                }
            } else if shards[shard].removeValue(forKey: key) != nil {
                count -= 1
            }
        }
    }

    /// Removes `name`. - Returns: its value, when it was there.
    @discardableResult
    mutating func removeValue(forKey name: [UInt8]) -> Value? {
        let removed = shards[Self.shard(of: name)].removeValue(forKey: ChannelKey(name))
        if removed != nil { count -= 1 }
        return removed
    }

    /// Empties the last shard that holds anything (freeing its entries), for an owner that
    /// drops a large table a 64th at a time.
    mutating func dropOneShard() {
        guard let last = shards.lastIndex(where: { !$0.isEmpty }) else { return }
        count -= shards[last].count
        shards[last] = [:]
    }

    /// Every name, in no particular order.
    var keys: [[UInt8]] { shards.flatMap { $0.keys.map(\.bytes) } }

    /// Every value, in no particular order.
    var values: [Value] { shards.flatMap { Array($0.values) } }
}

extension NameTable: Sequence {
    /// Iterates `(key, value)` pairs shard by shard.
    func makeIterator() -> AnyIterator<(key: [UInt8], value: Value)> {
        var shardIndex = 0
        var inner = shards.first?.makeIterator()
        let shards = self.shards
        return AnyIterator {
            while true {
                if let next = inner?.next() { return (next.key.bytes, next.value) }
                shardIndex += 1
                guard shardIndex < shards.count else { return nil }
                inner = shards[shardIndex].makeIterator()
            }
        }
    }
}
