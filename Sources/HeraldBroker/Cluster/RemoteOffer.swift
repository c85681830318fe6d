/// Another node's signal as this node's handlers see it (docs/cluster.md, "Signals and
/// links"): which local connections it was offered to (any of them may send callbacks
/// while it is under way), the offer held now, and what a callback is checked against.
/// The sender's node drives the signal; this node only relays.
final class RemoteOffer {
    /// The signal's global id (the sender's node is `id >> 32`).
    let id: Int
    /// The channel it was sent on (callbacks need subscribe permission on it).
    let origin: [UInt8]
    /// Every local connection it was offered to.
    var askedConnections: Set<ConnectionID> = []
    /// The offer held now: the connection and the attempt number the sender's node gave
    /// it; `holder` nil once answered.
    var holder: ConnectionID?
    var attempt = 0

    init(id: Int, origin: [UInt8]) {
        self.id = id
        self.origin = origin
    }

    /// The sender's node.
    var senderNode: Int { id >> 32 }
}
