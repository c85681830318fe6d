/// A channel's place in the history log (`HistoryLog`): its newest record and how many
/// events it ever recorded. Its events are the chain walked back from `newest` while each
/// record is live and within the channel's `history` count (`Broker.heldChain`).
struct ChannelHistory {
    /// The record number of the channel's newest event (-1: none).
    var newest = -1
    /// How many events the channel ever recorded: the position its next one gets. A replay
    /// keeps its place as a position, so events lost before it reached them are counted.
    var endPosition = 0
    /// Its slot in `HistorySlots` (-1: none yet, or dropped).
    var slot: Int32 = -1
}
