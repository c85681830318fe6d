import HeraldWire
#if canImport(Glibc)
import Glibc
#endif

/// Where an event on a channel goes: one subscription, or one member of a queue group.
enum Target {
    /// A subscription, with its frame prefix `{"event":"CH","sub":"NAME"` for this channel.
    case single(Subscription, prefix: [UInt8])
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
    /// Set when the record is dropped, so references cached elsewhere stop using it.
    var isRetired = false
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

extension Channel {
    /// The delivery targets, recomputed when the index changed since they were cached.
    func currentTargets(in index: SubscriptionIndex) -> [Target] {
        if cacheGeneration != index.generation {
            targets = index.targets(for: name).map { target in
                guard case .single(let subscription, _) = target else { return target }
                return .single(subscription, prefix: prefix(for: subscription))
            }
            cacheGeneration = index.generation
        }
        return targets
    }

    /// `{"event":"CH","sub":"NAME"` for one subscription.
    func prefix(for subscription: Subscription) -> [UInt8] {
        var prefix = eventHead
        prefix.appendJSONString(subscription.name)
        return prefix
    }

    /// Whether the record's name equals `bytes`.
    func hasName(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard bytes.count == name.count else { return false }
        return name.withUnsafeBytes { own in
            guard let a = own.baseAddress, let b = bytes.baseAddress else { return bytes.isEmpty }
            return memcmp(a, b, bytes.count) == 0
        }
    }
}
