import HeraldWire

/// Where an event on a channel goes: one subscription, or one member of a queue group.
enum Target {
    case single(Subscription)
    case group(QueueGroup)
}

/// A concrete channel the broker has seen: its sequence counter and its match cache.
///
/// The match cache holds the targets for this channel and is valid while `cacheGeneration`
/// equals the index's generation, so a steady stream of publishes walks no patterns.
final class Channel {
    /// The channel's name.
    let name: [UInt8]
    /// The last `seq` given to an event on it.
    var seq = 0
    /// `{"event":"NAME","sub":` precomputed for event frames.
    let eventHead: [UInt8]
    /// Cached delivery targets, in subscription order.
    var targets: [Target] = []
    /// The index generation `targets` was computed at; -1 when never.
    var cacheGeneration = -1
    /// The channel's last events, for `sub` with `since`.
    var history = EventHistory()

    init(name: [UInt8]) {
        self.name = name
        var head: [UInt8] = []
        head.appendRaw(#"{"event":"#)
        head.appendJSONString(name)
        head.appendRaw(#","sub":"#)
        self.eventHead = head
    }
}
