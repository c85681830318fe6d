/// How a table's snapshot meets what the node held before it.
enum MirrorSnapshotPolicy: Sendable {
    /// The other nodes' rows become exactly the snapshot's; only the held changes newer than
    /// the snapshot are replayed over it (all of them when Redis's versions went back).
    case exact
    /// The snapshot is added to what the table holds (a node whose liveness lapsed while
    /// Redis was away is missing from it but keeps its rows), and every held change is
    /// replayed: the table keeps a version per row and refuses a change older than it.
    case merge
}
