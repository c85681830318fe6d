/// The tables every node mirrors through Redis (docs/cluster.md, "Interest", "Locks",
/// "Signals and links", "Instance channels"), in the order a node reads their snapshots
/// and registers its own rows again after an outage.
enum MirrorTableTag: Int, CaseIterable, Sendable {
    /// Which node has subscribers on which patterns and queue groups (`InterestTable`).
    case interest
    /// Every connection's locks (`LockTable`).
    case locks
    /// The instance channels this node's connections own (claimed in Redis, not mirrored).
    case instanceOwners
    /// Every connection's links (`Broker.links`).
    case links
    /// Every connection's signal handlers (`ClusterHandlerTable`).
    case handlers
}
