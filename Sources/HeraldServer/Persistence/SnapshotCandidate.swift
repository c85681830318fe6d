/// A base the state can be rebuilt from: a snapshot file, or the empty state of generation 0
/// (before the first compaction, when `log.0` holds everything).
enum SnapshotCandidate: Equatable {
    /// `snapshot` or `snapshot.previous`.
    case file(String)
    /// Nothing: generation 0, every channel known to be empty.
    case empty

    /// The file's name, or a description of the empty base, for notes.
    var label: String {
        switch self {
        case .file(let name): return name
        case .empty: return "the empty state before log.0"
        }
    }
}
