/// A link change announced on the interest channel (`ClusterLinkScripts`):
/// `KNODE V OWNER CH PARENT` (set) or `kNODE V OWNER CH CH…` (removed).
struct ClusterLinkMessage {
    /// The node the owner is on.
    let node: Int
    /// The interest version of the change.
    let version: Int
    /// The owner's global client id.
    let owner: Int
    /// The channels: one for a link set, any number for removals.
    let channels: [[UInt8]]
    /// The parent of a link set; nil for removals.
    let parent: [UInt8]?

    /// Parses a message. - Returns: nil when it is not a link change or is malformed.
    init?(_ payload: [UInt8]) {
        guard let kind = payload.first, kind == UInt8(ascii: "K") || kind == UInt8(ascii: "k") else { return nil }
        let fields = payload.dropFirst().split(separator: 32, omittingEmptySubsequences: true)
        guard fields.count >= 4, let node = ClusterWireNumber.parse(fields[0]), let version = ClusterWireNumber.parse(fields[1]),
              let owner = ClusterWireNumber.parse(fields[2]) else { return nil }
        if kind == UInt8(ascii: "K") {
            guard fields.count == 5 else { return nil }
            channels = [Array(fields[3])]
            parent = Array(fields[4])
        } else {
            channels = fields.dropFirst(3).map { Array($0) }
            parent = nil
        }
        self.node = node
        self.version = version
        self.owner = owner
    }
}
