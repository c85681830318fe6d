/// An interest-channel payload a mirrored table recognised as its own.
enum MirrorMessage {
    /// A change at an interest version: it follows the sync rules (`MirrorSync`).
    case change(version: Int, MirrorChange)
    /// A change without a version (an instance channel's removal): applied at once, ready
    /// or not, since it only ends subscriptions on this node.
    case unversioned(MirrorChange)
    /// The table's kind of message, malformed: logged and dropped.
    case malformed
}
