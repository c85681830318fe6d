import HeraldBroker

/// A snapshot that passed `SnapshotFile.verify`: every record checked, none applied yet.
struct SnapshotContents {
    /// The generation the snapshot starts; its log is `log.<generation>`.
    var generation: UInt64
    /// The records with the offset each starts at, in file order.
    var records: [(offset: Int, record: StateRecord)]
}
