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
        guard let node = ClusterWireNumber.read(payload, at: &at), ClusterWireNumber.skip(32, in: payload, at: &at),
              let version = ClusterWireNumber.read(payload, at: &at), ClusterWireNumber.skip(32, in: payload, at: &at),
              let owner = ClusterWireNumber.read(payload, at: &at) else { return nil }
        var records: [[UInt8]] = []
        while at < payload.count {
            guard ClusterWireNumber.skip(32, in: payload, at: &at), let length = ClusterWireNumber.read(payload, at: &at),
                  ClusterWireNumber.skip(UInt8(ascii: ":"), in: payload, at: &at), payload.count - at >= length else { return nil }
            records.append(Array(payload[at..<(at + length)]))
            at += length
        }
        self.node = node
        self.version = version
        self.owner = owner
        self.records = records
    }
}
