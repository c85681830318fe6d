/// `+NODE V PATTERN` or `-NODE V PATTERN` on the interest channel: node `NODE` gained its
/// first or lost its last subscriber on `PATTERN` (a channel, a wildcard, or a queue group's
/// `KEYLEN:PATTERN GROUP`), at interest version `V`.
struct ClusterInterestMessage: MirrorWireMessage {
    /// The announcing node.
    let node: Int
    /// The interest version.
    let version: Int
    /// The pattern (or group key).
    let pattern: [UInt8]
    /// `+`: gained; `-`: lost.
    let added: Bool

    /// `version`.
    var announcedVersion: Int? { version }
    /// `node`.
    var announcingNode: Int? { node }

    /// `+` or `-`.
    static func isOwn(_ payload: [UInt8]) -> Bool {
        payload.first == UInt8(ascii: "+") || payload.first == UInt8(ascii: "-")
    }

    /// Parses a message. - Returns: nil when it is malformed.
    init?(_ payload: [UInt8]) {
        let fields = payload.dropFirst().split(separator: 32, maxSplits: 2, omittingEmptySubsequences: false)
        guard fields.count == 3, let node = ClusterWireNumber.parse(fields[0]),
              let version = ClusterWireNumber.parse(fields[1]) else { return nil }
        self.node = node
        self.version = version
        pattern = Array(fields[2])
        added = payload.first == UInt8(ascii: "+")
    }
}
