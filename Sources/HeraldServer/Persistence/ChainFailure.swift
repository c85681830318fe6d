/// Why a base and the logs after it cannot rebuild the state.
enum ChainFailure: Error, Equatable {
    /// The snapshot does not verify: `file`, where and why.
    case snapshotDamaged(file: String, damage: SnapshotDamage)
    /// A log the chain needs is not there.
    case logMissing(file: String)
    /// A log is damaged where valid records follow (or anywhere, in a log that is not the last).
    case logDamaged(file: String, offset: Int, dropping: Int)
    /// A CRC-valid record that does not fit the state before it.
    case recordDoesNotFit(file: String, offset: Int)
    /// The files cannot be read or written.
    case io(PersistenceError)

    /// What is wrong, naming the file and the offset.
    var summary: String {
        switch self {
        case .snapshotDamaged(let file, let damage):
            return file + ": damaged at byte " + String(damage.offset) + " (" + damage.reason + ")"
        case .logMissing(let file):
            return file + ": missing, and the snapshot before it needs it"
        case .logDamaged(let file, let offset, _):
            return file + ": damaged at byte " + String(offset) + " with valid records after it"
        case .recordDoesNotFit(let file, let offset):
            return file + ": the record at byte " + String(offset) + " does not fit the state before it"
        case .io(let error):
            return error.description
        }
    }

    /// The refusal message of a plain start: the summary and what `--repair` would do.
    var refusal: PersistenceError {
        let start = "; refusing to start. Start with --repair to "
        switch self {
        case .snapshotDamaged:
            return PersistenceError(summary + start
                + "set it aside in damaged/ and rebuild from the previous snapshot and the logs")
        case .logMissing, .recordDoesNotFit:
            return PersistenceError(summary + start
                + "set the files aside in damaged/ and rebuild what they still determine, reporting the rest")
        case .logDamaged(_, _, let dropping):
            return PersistenceError(summary + start + "cut the log there (dropping " + String(dropping)
                + " bytes; the whole log is copied to damaged/ first)")
        case .io(let error):
            return error
        }
    }
}
