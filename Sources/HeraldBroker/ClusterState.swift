/// What cluster mode adds to the broker (docs/cluster.md): the events this node's clients
/// published, waiting for the engine to send them to Redis in one batch per loop pass; the
/// changes of this node's interest (patterns gaining their first or losing their last local
/// subscriber); and the interest tickets every node has seen (the `sub` answers waiting for
/// them are held like durability answers, in `Retention.heldSessions`).
///
/// The broker stays pure: it fills this and the server's `ClusterEngine` drains it, talks to
/// Redis, and calls back `Broker.deliverRemote` and `Broker.interestSeen`.
public final class ClusterState {
    /// One event published here, for the batch.
    public struct Event: Sendable {
        /// The concrete channel.
        public let channel: [UInt8]
        /// The publishing connection's global id.
        public let from: ConnectionID
        /// The raw JSON of `data`, when the event has one.
        public let data: [UInt8]?
        /// The token of the publisher's receipt (`pub` with a `rid`), or 0.
        public let receipt: Int
        /// A `req`'s reply token (32 hex digits, the first 8 naming this node), or nil.
        public var replyToken: [UInt8]? = nil
        /// A `req`'s `timeout_ms`: how long delivering nodes keep who may reply.
        public var requestTimeoutMs: Int = 0
        /// Whether the event goes into the channel's history (`req`s and `$sys` events do
        /// not, as on one node).
        public var keepsHistory: Bool = true
        /// When set, not an event but a message for that node's channel (`data` holds it,
        /// `ClusterNodeMessage`): a reply on its way to the requester's node, or an answer.
        public var directNode: Int? = nil
    }

    /// A change of this node's interest.
    public struct InterestChange: Sendable, Equatable {
        /// The pattern (channel or wildcard pattern).
        public let pattern: [UInt8]
        /// Whether the node now has a subscriber on it (false: its last one left).
        public let added: Bool
        /// The ticket of the barrier a new interest holds answers behind (0 for removals
        /// and for registering again after Redis came back).
        public let ticket: Int
        /// For a queue group's membership on this node: the group's name (nil: plain
        /// interest in `pattern`).
        public var group: [UInt8]? = nil
        /// For a group: how many members it has on this node now (`added` false: 0).
        public var members: Int = 0

        /// A change of `pattern`.
        public init(pattern: [UInt8], added: Bool, ticket: Int) {
            self.pattern = pattern
            self.added = added
            self.ticket = ticket
        }

        /// A change of the queue group `group` on `pattern`: `members` on this node now.
        public init(pattern: [UInt8], group: [UInt8], members: Int, ticket: Int) {
            self.init(pattern: pattern, added: members > 0, ticket: ticket)
            self.group = group
            self.members = members
        }
    }

    /// A publisher waiting for its event's `seq`.
    struct Receipt {
        let session: Session
        let rid: [UInt8]
    }

    /// This node's index in the cluster (client ids are `index << 32 | n`).
    public let nodeIndex: Int
    /// This node's name (`cluster.node`), in `info` and `stats`.
    public let nodeName: String
    /// Events in publish order since the engine last took them.
    public private(set) var outbox: [Event] = []
    /// Interest changes in order since the engine last took them.
    public private(set) var interest: [InterestChange] = []
    /// The last barrier ticket handed out, and the highest every node has acknowledged.
    private(set) var lastTicket = 0
    public private(set) var ticketsDone = 0
    var receipts: [Int: Receipt] = [:]
    private var nextReceipt = 0
    /// Requests from any node delivered here with auth on: who may reply (`DeliveredRequests`).
    var delivered = DeliveredRequests()

    /// Cluster mode for the node with this index and name.
    public init(nodeIndex: Int, nodeName: String = "") {
        self.nodeIndex = nodeIndex
        self.nodeName = nodeName
    }

    /// Whether the engine has something to send.
    public var hasWork: Bool { !outbox.isEmpty || !interest.isEmpty }

    /// Hands the queued events to the engine, in order.
    public func takeOutbox() -> [Event] {
        defer { outbox.removeAll(keepingCapacity: true) }
        return outbox
    }

    /// Hands the queued interest changes to the engine, in order.
    public func takeInterest() -> [InterestChange] {
        defer { interest.removeAll(keepingCapacity: true) }
        return interest
    }

    func enqueue(_ event: Event) {
        outbox.append(event)
    }

    /// Records a new interest and returns the ticket its answers wait for.
    func added(_ pattern: [UInt8]) -> Int {
        lastTicket += 1
        interest.append(InterestChange(pattern: pattern, added: true, ticket: lastTicket))
        return lastTicket
    }

    func removed(_ pattern: [UInt8]) {
        interest.append(InterestChange(pattern: pattern, added: false, ticket: 0))
    }

    /// Records a queue group's membership count on this node. The first member to join (a
    /// group new here) gets a barrier ticket; later counts and leaving members do not.
    /// - Returns: the ticket the `sub` answer waits for, or 0.
    func groupChanged(_ pattern: [UInt8], group: [UInt8], members: Int, joined: Bool) -> Int {
        let ticket = joined && members == 1 ? lastTicket + 1 : 0
        if ticket > 0 { lastTicket = ticket }
        // A connection leaving with many members of one group: one count per pass, not one
        // Redis call per member.
        if ticket == 0, let last = interest.last, last.ticket == 0, last.members > 0,
           last.group == group, last.pattern == pattern {
            interest[interest.count - 1] = InterestChange(pattern: pattern, group: group, members: members, ticket: 0)
            return 0
        }
        interest.append(InterestChange(pattern: pattern, group: group, members: members, ticket: ticket))
        return ticket
    }

    func markDone(upTo ticket: Int) {
        ticketsDone = max(ticketsDone, ticket)
    }

    func newReceipt(_ session: Session, rid: [UInt8]) -> Int {
        nextReceipt += 1
        receipts[nextReceipt] = Receipt(session: session, rid: rid)
        return nextReceipt
    }
}
