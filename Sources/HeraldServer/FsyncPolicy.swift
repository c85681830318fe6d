/// When the state log is flushed to the disk (`fsync`).
///
/// Every policy writes a state change to the log file before its `ok` is sent, so a
/// `kill -9` never loses an acknowledged write; the policy decides what a power loss may
/// take: with `always` nothing acknowledged, with `everysec` about a second, with `no`
/// whatever the kernel had not written back yet.
public enum FsyncPolicy: String, Sendable, CaseIterable {
    /// `fdatasync` after every batch of records, before their `ok`s leave.
    case always
    /// `fdatasync` at most once a second, off the loop.
    case everysec
    /// Leave flushing to the kernel (still synced at compaction and exit).
    case no
}
