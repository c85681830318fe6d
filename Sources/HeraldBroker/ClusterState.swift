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

        /// A change of `pattern`.
        public init(pattern: [UInt8], added: Bool, ticket: Int) {
            self.pattern = pattern
            self.added = added
            self.ticket = ticket
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

    func markDone(upTo ticket: Int) {
        ticketsDone = max(ticketsDone, ticket)
    }

    func newReceipt(_ session: Session, rid: [UInt8]) -> Int {
        nextReceipt += 1
        receipts[nextReceipt] = Receipt(session: session, rid: rid)
        return nextReceipt
    }
}
