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

/// A table's message on the interest channel: told apart by its first bytes, parsed whole,
/// carrying the interest version it was announced at.
protocol MirrorWireMessage {
    /// Whether `payload` is of this kind (well formed or not).
    static func isOwn(_ payload: [UInt8]) -> Bool
    /// Parses a message. - Returns: nil when it is malformed.
    init?(_ payload: [UInt8])
    /// The interest version it was announced at; nil: it has none (applied at once).
    var announcedVersion: Int? { get }
    /// The node that announced it; nil when Redis's reaper may have.
    var announcingNode: Int? { get }
}

extension MirrorMessage {
    /// `payload` as a versioned change of `M`'s table: nil when it is not of that kind,
    /// `.malformed` when it is but does not parse.
    static func read<M: MirrorWireMessage>(_ payload: [UInt8], as _: M.Type) -> MirrorMessage? {
        guard M.isOwn(payload) else { return nil }
        guard let message = M(payload) else { return .malformed }
        guard let version = message.announcedVersion else { return .unversioned(MirrorChange(message: message)) }
        return .change(version: version, MirrorChange(message: message))
    }
}

extension ClusterLockMessage: MirrorWireMessage {
    /// `version`.
    var announcedVersion: Int? { version }
    /// `node`.
    var announcingNode: Int? { node }

    /// `isLockMessage`.
    static func isOwn(_ payload: [UInt8]) -> Bool { isLockMessage(payload) }
}

extension ClusterHandlerMessage: MirrorWireMessage {
    /// `version`.
    var announcedVersion: Int? { version }
    /// `node`.
    var announcingNode: Int? { node }

    /// `isHandlerMessage`.
    static func isOwn(_ payload: [UInt8]) -> Bool { isHandlerMessage(payload) }
}

extension ClusterLinkMessage: MirrorWireMessage {
    /// `version`.
    var announcedVersion: Int? { version }
    /// `node`.
    var announcingNode: Int? { node }

    /// `K…` (link) or `k…` (unlink).
    static func isOwn(_ payload: [UInt8]) -> Bool {
        payload.first == UInt8(ascii: "K") || payload.first == UInt8(ascii: "k")
    }
}
