/// One signal on its way up the channel hierarchy.
///
/// It holds the route (levels, computed when the signal is sent), where along it the
/// signal is, the handler it waits for, and what the sender's final `ok` will say.
final class PendingSignal {
    /// The daemon-wide number; the wire id is `g` + number.
    let id: Int
    /// The wire id as a JSON string (`"g12"`).
    let quotedID: [UInt8]
    /// The connection that sent it.
    let sender: Session
    /// The channel it was sent on.
    let origin: [UInt8]
    /// Raw JSON of `data` and `tag`, when given.
    let data: [UInt8]?
    let tag: [UInt8]?
    /// The sender's `rid`, echoed in the final `ok`.
    let rid: [UInt8]?
    /// How long each handler may take.
    let timeoutMs: Int
    /// The levels, from the origin up.
    let levels: [[UInt8]]
    /// The level being offered.
    var levelIndex = -1
    /// The handlers of that level, in subscription order (cluster mode: in the cluster's
    /// registration order, some on other nodes), and the next one to ask.
    var candidates: [SignalCandidate] = []
    var nextCandidate = 0
    /// The handler asked now: its global id and, when local, its connection; when on
    /// another node, that node (`offeredNode`).
    var offeredID: [UInt8]?
    var offeredTo: ConnectionID?
    var offeredNode: Int?
    /// How many offers were made (cluster mode numbers each, so a late answer to an
    /// earlier offer is told apart).
    var attempt = 0
    /// The other nodes it was offered on (told when it ends).
    var askedNodes: Set<Int> = []
    /// Every connection it was offered to (a `handled` from anyone else is `not_found`).
    var askedConnections: Set<ConnectionID> = []
    /// How many handlers were asked.
    var hops = 0
    /// Global ids of handlers that timed out or left mid-offer.
    var timeouts: [[UInt8]] = []

    init(id: Int, sender: Session, origin: [UInt8], data: [UInt8]?, tag: [UInt8]?, rid: [UInt8]?,
         timeoutMs: Int, levels: [[UInt8]]) {
        self.id = id
        self.quotedID = Self.quoted(id)
        self.sender = sender
        self.origin = origin
        self.data = data
        self.tag = tag
        self.rid = rid
        self.timeoutMs = timeoutMs
        self.levels = levels
    }

    /// The level being offered, when any.
    var level: [UInt8]? { levels.indices.contains(levelIndex) ? levels[levelIndex] : nil }

    /// A signal's wire id as a JSON string (`"g12"`).
    static func quoted(_ id: Int) -> [UInt8] {
        var quoted: [UInt8] = [UInt8(ascii: "\""), UInt8(ascii: "g")]
        quoted.appendInt(id)
        quoted.append(UInt8(ascii: "\""))
        return quoted
    }

    /// Parses a wire id (`g12`) back to its number.
    static func number(from bytes: [UInt8]) -> Int? {
        guard bytes.count > 1, bytes.count <= 19, bytes.first == UInt8(ascii: "g") else { return nil }
        var value = 0
        for byte in bytes.dropFirst() {
            guard byte >= 48, byte <= 57 else { return nil }
            value = value * 10 + Int(byte - 48)
        }
        return value
    }
}

import HeraldWire

/// A handler a signal may be offered to at one level: a subscription here, or one on
/// another node (cluster mode).
enum SignalCandidate {
    case local(Subscription)
    case remote(ClusterHandler)
}
