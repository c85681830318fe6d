/// Reply tokens in cluster mode (docs/cluster.md, "Requests and replies"): the first 8 hex
/// digits are the requester's node index, so a `reply` on any node knows where to send the
/// answer, and tokens of different nodes never collide; the other 96 bits stay random, still
/// far beyond guessing.
extension ReplyToken {
    /// A token naming node `node` (its index below 2^32), with 96 random bits.
    init(node: Int, random: () -> UInt64) {
        high = UInt64(truncatingIfNeeded: node) << 32 | (random() & 0xFFFF_FFFF)
        low = random()
    }

    /// The node index in the first 32 bits (meaningful for cluster tokens only).
    var node: Int { Int(high >> 32) }
}
