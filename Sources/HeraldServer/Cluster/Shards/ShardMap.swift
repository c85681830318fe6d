/// Which Redis shard holds a channel (issue 33; docs/architecture.md, "Several Redis
/// primaries"): jump consistent hash (Lamping and Veach, 2014) over the FNV-1a 64-bit hash of
/// the channel's bytes, the placement Centrifugo's `consistentIndex` uses, so every node agrees
/// without talking, and growing the list from N to N+1 shards moves only the channels that go
/// to the new one (about 1/(N+1) of them). Shard 0 also holds the cluster's own records.
///
/// Pure: no Redis, no clock. The engine (`ClusterEngine+Shards`) and `heraldd --reshard`
/// place channels with it.
struct ShardMap: Equatable, Sendable {
    /// How many shards there are (at least one).
    let count: Int

    /// A map over `count` shards (1 when less is given).
    init(count: Int) {
        self.count = max(1, count)
    }

    /// The shard of `channel`, in `0..<count`. The daemon's own channels (`$sys.…`, every
    /// name starting with `$`) all live on shard 0: few events, and their order across
    /// channels matters (a client's `connected` before its `disconnected`), which one shard
    /// keeps and two would not.
    func shard(of channel: some Sequence<UInt8>) -> Int {
        guard count > 1, channel.first(where: { _ in true }) != UInt8(ascii: "$") else { return 0 }
        return Self.jump(Self.fnv1a64(channel), buckets: count)
    }

    /// FNV-1a, 64 bits: offset basis 0xcbf29ce484222325, prime 0x100000001b3.
    static func fnv1a64(_ bytes: some Sequence<UInt8>) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            hash ^= UInt64(byte)
            hash &*= 0x0000_0100_0000_01b3
        }
        return hash
    }

    /// Jump consistent hash: the bucket of `key` among `buckets`, as in the paper's
    /// reference code (a linear congruential step, then a jump while it stays below).
    static func jump(_ key: UInt64, buckets: Int) -> Int {
        var key = key
        var bucket: Int64 = -1
        var next: Int64 = 0
        while next < Int64(buckets) {
            bucket = next
            key = key &* 2_862_933_555_777_941_757 &+ 1
            next = Int64(Double(bucket + 1) * (Double(Int64(1) << 31) / Double((key >> 33) &+ 1)))
        }
        return Int(bucket)
    }
}
