/// What an offer frame (`{"signal":LEVEL,"id":…}`) says besides the handler's own fields:
/// the same for a signal of this node and for one relayed from another node.
struct SignalOfferFrame {
    /// The level the signal is at.
    let level: [UInt8]
    /// The signal's wire id as a JSON string (`"g12"`).
    let quotedID: [UInt8]
    /// The channel it was sent on.
    let origin: [UInt8]
    /// The sender's client id as a JSON string.
    let quotedFrom: [UInt8]
    /// Raw JSON of `tag` and `data`, when given.
    let tag: [UInt8]?
    let data: [UInt8]?
}
