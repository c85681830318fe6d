/// A lock change announced on the interest channel (`ClusterLockScripts.locks`):
/// `OPNODE V OWNER` then ` LEN:RECORD` per record, `OP` being `L` (taken), `U` (released)
/// or `X` (all of the owner's released).
struct ClusterLockMessage {
    /// `L`, `U` or `X`.
    let op: UInt8
    /// The node the owner is on.
    let node: Int
    /// The interest version of the change.
    let version: Int
    /// The owner's global client id.
    let owner: Int
    /// The lock records (`ClusterLockRecord`).
    let records: [[UInt8]]

    /// Whether a message on the interest channel is a lock change.
    static func isLockMessage(_ payload: [UInt8]) -> Bool {
        guard let first = payload.first else { return false }
        return first == UInt8(ascii: "L") || first == UInt8(ascii: "U") || first == UInt8(ascii: "X")
    }

    /// Parses a message. - Returns: nil when it is malformed.
    init?(_ payload: [UInt8]) {
        guard Self.isLockMessage(payload) else { return nil }
        op = payload[0]
        var at = 1
        func number(until end: UInt8?) -> Int? {
            var value = 0
            var digits = 0
            while at < payload.count, payload[at] != end {
                let byte = payload[at]
                guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9"), digits < 18 else { return nil }
                value = value * 10 + Int(byte - UInt8(ascii: "0"))
                digits += 1
                at += 1
            }
            guard digits > 0 else { return nil }
            if at < payload.count { at += 1 }
            return value
        }
        guard let node = number(until: 32), let version = number(until: 32), let owner = number(until: 32) else { return nil }
        var records: [[UInt8]] = []
        while at < payload.count {
            guard let length = number(until: UInt8(ascii: ":")), payload.count - at >= length else { return nil }
            records.append(Array(payload[at..<(at + length)]))
            at += length
            if at < payload.count {
                guard payload[at] == 32 else { return nil }
                at += 1
            }
        }
        self.node = node
        self.version = version
        self.owner = owner
        self.records = records
    }
}
