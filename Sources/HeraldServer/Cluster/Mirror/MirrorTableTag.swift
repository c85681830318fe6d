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

extension MirrorTableTag {
    /// How the table's snapshot meets the rows held before it: a merge for interest (each
    /// entry carries its version, and a node whose liveness lapsed while Redis was away keeps
    /// its routes); exact for the others, whose changes carry no version per row, so a merge
    /// could not tell a release missed while Redis was away from a row the snapshot lacks
    /// (the price, a node left out of a snapshot losing its rows here, is paid by the resync,
    /// which announces every row in full). Instance owners have no snapshot.
    var policy: MirrorSnapshotPolicy { self == .interest ? .merge : .exact }

    /// The script that reads every live node's rows at one version (`ClusterScripts.snapshot`,
    /// `ClusterLockScripts`, `ClusterLinkScripts`, `ClusterHandlerScripts`); nil: none.
    var snapshotScript: String? {
        switch self {
        case .interest: return "snapshot"
        case .locks: return "lockSnapshot"
        case .instanceOwners: return nil
        case .links: return "linkSnapshot"
        case .handlers: return "handlerSnapshot"
        }
    }

    /// Whether the table enters this node's own announced changes: interest (the routing
    /// table holds every node, this one too), handlers (the table holds every handler with
    /// the score Redis gave it) and removals do; locks and links are entered here when they
    /// are taken, so their announcements are for the other nodes.
    var appliesOwnChanges: Bool { self != .locks && self != .links }

    /// The table's name in logs.
    var name: String {
        switch self {
        case .interest: return "interest"
        case .locks: return "lock"
        case .instanceOwners: return "removal"
        case .links: return "link"
        case .handlers: return "handler"
        }
    }
}
