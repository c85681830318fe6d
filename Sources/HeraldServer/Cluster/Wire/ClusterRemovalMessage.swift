/// `ROWNER REASON CH CH…` on the interest channel: instance channels removed in Redis (by
/// their owner, or by the reaper for a dead node). Carries no interest version.
struct ClusterRemovalMessage: MirrorWireMessage {
    /// The removed channels.
    let names: [[UInt8]]
    /// The owner's global connection id (its node is `owner >> 32`).
    let owner: Int
    /// None: a removal is applied at once, ready or not.
    var announcedVersion: Int? { nil }
    /// None: the reaper announces a dead node's removals.
    var announcingNode: Int? { nil }

    /// `R`.
    static func isOwn(_ payload: [UInt8]) -> Bool { payload.first == UInt8(ascii: "R") }

    /// Parses a message. - Returns: nil when it is malformed.
    init?(_ payload: [UInt8]) {
        let fields = payload.dropFirst().split(separator: 32, omittingEmptySubsequences: true)
        guard fields.count >= 3, let owner = ClusterWireNumber.parse(fields[0]) else { return nil }
        self.owner = owner
        names = fields.dropFirst(2).map { Array($0) }
    }
}
