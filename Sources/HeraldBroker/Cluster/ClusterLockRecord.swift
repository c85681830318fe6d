import HeraldWire

/// A lock as it travels between nodes and sits in Redis (docs/cluster.md, "Locks"): the
/// owner travels beside it, the record says what it covers.
///
/// - `P<len>:<pattern>`: every subscription, on channels matching the pattern (`lock {ch}`);
/// - `P<len>:<pattern>cN/NAME`: that subscription, on channels matching it (`lock {ch, subs}`);
/// - `AcN/NAME`: that subscription, on every channel (`lock {sub}`).
///
/// The pattern's length comes first because a subscription name may hold any byte.
enum ClusterLockRecord {
    /// The record of a lock's selector (its owner travels separately).
    static func encode(_ lock: Lock) -> [UInt8] {
        var out: [UInt8] = []
        if let pattern = lock.pattern {
            out.append(UInt8(ascii: "P"))
            out.appendInt(pattern.count)
            out.append(UInt8(ascii: ":"))
            out.append(contentsOf: pattern)
        } else {
            out.append(UInt8(ascii: "A"))
        }
        if let key = lock.subscription {
            out.append(UInt8(ascii: "c"))
            out.appendInt(key.client)
            out.append(UInt8(ascii: "/"))
            out.append(contentsOf: key.name)
        }
        return out
    }

    /// The lock a record names for `owner`. - Returns: nil when the record is malformed
    /// (a node of another version, or damage): such a record is ignored.
    static func decode<Bytes: Collection<UInt8>>(_ record: Bytes, owner: ConnectionID) -> Lock? where Bytes.Index == Int {
        guard let kind = record.first else { return nil }
        var at = record.startIndex + 1
        var pattern: [UInt8]?
        if kind == UInt8(ascii: "P") {
            var length = 0
            while at < record.endIndex, record[at] != UInt8(ascii: ":") {
                let digit = record[at]
                guard digit >= UInt8(ascii: "0"), digit <= UInt8(ascii: "9"), length < 1 << 20 else { return nil }
                length = length * 10 + Int(digit - UInt8(ascii: "0"))
                at += 1
            }
            guard at < record.endIndex, length > 0, record.endIndex - (at + 1) >= length else { return nil }
            pattern = Array(record[(at + 1)..<(at + 1 + length)])
            at += 1 + length
        } else if kind != UInt8(ascii: "A") {
            return nil
        }
        var subscription: SubscriptionKey?
        if at < record.endIndex {
            guard let key = SubscriptionKey(globalID: Array(record[at...])) else { return nil }
            subscription = key
        } else if pattern == nil {
            return nil
        }
        return Lock(owner: owner, pattern: pattern, subscription: subscription)
    }
}
