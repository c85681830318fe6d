/// Where and why a snapshot failed `SnapshotFile.verify`.
struct SnapshotDamage: Error, Equatable {
    /// The byte offset of the header or record that does not check out.
    var offset: Int
    /// What is wrong there, for the refusal message.
    var reason: String
}
