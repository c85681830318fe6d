/// A change of a mirrored table, as heard on the interest channel: its parsed message (the
/// table's own `MirrorWireMessage` type), held as it is until the table applies it.
struct MirrorChange {
    /// The message.
    let message: any MirrorWireMessage

    /// The node that announced it; nil for a removal (Redis's reaper may announce one).
    var node: Int? { message.announcingNode }
}
