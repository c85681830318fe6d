import HeraldBroker

/// The state rebuilt from a base and the logs after it, before the current log is reopened.
struct ChainLoad {
    /// The known channels' state.
    var entries: [[UInt8]: StoredState]
    /// The rev floor.
    var revFloor: Int
    /// The generation of the log to continue (`log.<generation>`), the newest one.
    var generation: UInt64
    /// The valid length of that log: where the writer appends.
    var logBytes: Int
    /// Its length on disk (more when a tail is to be cut).
    var logFileBytes: Int
    /// The base snapshot's size (0 for the empty base).
    var snapshotBytes: Int
    /// Log records applied.
    var replayed: Int
    /// Channels the records could not rebuild (a record needing a base that is not known).
    var lost: [[UInt8]]
}
