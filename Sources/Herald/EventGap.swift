/// Events one subscription will never get: the daemon's `{"gap":CH,"sub":NAME,"from":F,"to":T}`.
///
/// A cluster node sends it where events could no longer be delivered (a primary lost them, a
/// read back after an outage could not find them), before the subscription's next event. The
/// client hands it to ``SubscriptionOptions/onGap`` (where the handler runs, in order with the
/// events), else to the error handler as ``HeraldClientError/gap(_:)``; mirrors read their state
/// again instead.
public struct EventGap: Sendable, Equatable, CustomStringConvertible {
    /// The concrete channel the events were published on.
    public let channel: String
    /// The subscription's name on this connection.
    public let subscription: String
    /// The missing `seq`s, both ends included.
    public let seqs: ClosedRange<Int>

    /// Creates a gap description.
    /// - Parameters:
    ///   - channel: the channel of the missing events.
    ///   - subscription: the subscription that will not get them.
    ///   - seqs: the missing `seq`s, inclusive.
    public init(channel: String, subscription: String, seqs: ClosedRange<Int>) {
        self.channel = channel
        self.subscription = subscription
        self.seqs = seqs
    }

    /// Reads a `gap` frame; nil when a field is missing or the range is empty.
    init?(frame: ServerFrame) {
        guard let channel = frame.string("gap"), let subscription = frame.string("sub"),
              let from = frame.int("from"), let to = frame.int("to"), from <= to else { return nil }
        self.init(channel: channel, subscription: subscription, seqs: from...to)
    }

    /// A one-line human description.
    public var description: String {
        "subscription \(subscription) will not get events \(seqs.lowerBound)...\(seqs.upperBound) of \(channel)"
    }
}
