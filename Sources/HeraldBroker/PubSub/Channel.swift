import HeraldWire
#if canImport(Glibc)
import Glibc
#endif

/// Where an event on a channel goes: one subscription, or one member of a queue group.
enum Target {
    case single(Subscription)
    case group(QueueGroup)
}

/// A cached target as the fan-out loop reads it; `Channel.targets` keeps the objects alive.
struct FastTarget {
    let subscription: Unmanaged<Subscription>?
    let group: Unmanaged<QueueGroup>?
    /// The subscription's frame prefix, as a range of `Channel.prefixArena`.
    let prefix: Range<Int>
    /// A plain subscription's session (no group, `args` or `max`, not a handler, nothing
    /// dropped when cached): the fan-out delivers to it without reading the subscription
    /// object at all (`Broker.deliverPlain`); nil for every other target.
    ///
    /// Why: with 100,000 channels the subscription objects do not fit the caches, and the
    /// first read of one (`isActive`) was a fifth of the daemon's cycles (`perf`). Safe
    /// without that read: a cached subscription is active (`refreshTargets` leaves retired
    /// ones out), and it cannot stop being active without the index's generation changing
    /// before the next fan-out (an `unsub` or end leaves the index at once; a closing
    /// session's retirement invalidates every cache, `removeAllSubscriptions`), so neither
    /// can its session go away while this pointer is cached.
    let plainSession: Unmanaged<Session>?
    /// Whether the subscription is compact (its frames leave `from` out).
    let isCompact: Bool
    /// Whether another plain target has the same prefix (the same range): its frames can be
    /// written once into the `FrameArena` and queued by reference (`Broker.deliverPlain`).
    var sharesPrefix = false
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
    /// Cluster mode: the broker's subscription serial when an event from Redis last reached
    /// the channel here. A subscription with a higher serial was made after it, so events
    /// missed during a Redis outage are not known to be its (`Broker+ClusterResume`).
    var clusterSerial = 0
    /// `{"event":"NAME","sub":` precomputed for event frames.
    let eventHead: [UInt8]
    /// How much of `eventHead` a compact subscription's frames start with: `{"event":"NAME"`.
    var compactHeadCount: Int { eventHead.count - Channel.subKeyCount }
    /// `,"sub":`, the end of `eventHead` that compact frames leave out.
    static let subKeyCount = 7
    /// Cached delivery targets, in subscription order (they keep the objects alive).
    var targets: [Target] = []
    /// The same targets as the fan-out loop reads them: unmanaged references (no reference
    /// counting per delivery) and prefixes as ranges of `prefixArena`.
    var fastTargets: [FastTarget] = []
    /// Every single target's `{"event":"CH","sub":"NAME"`, back to back.
    var prefixArena: [UInt8] = []
    /// The index generation `targets` was computed at; -1 when never.
    var cacheGeneration = -1
    /// Set when the record is dropped, so references cached elsewhere stop using it.
    var isRetired = false
    /// Set while `Broker.fanOut` reads the cache in place: `refreshTargets` leaves it alone
    /// then (the next fan-out refreshes it), so the arrays being read are never replaced.
    var isFanningOut = false
    /// The channel's place in the history log, for `sub` with `since` (`ChannelHistory`).
    var history = ChannelHistory()
    /// The account of the user whose request made the record (`user_limits.channels`).
    var creator: UserAccount?

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
    /// Recomputes the cached targets when the index changed since they were cached.
    ///
    /// The check is inlined into every publish (a call for it was 25 instructions a publish,
    /// callgrind 1→1 16 B); the rebuild is not.
    @inline(__always)
    func refreshTargets(in index: SubscriptionIndex) {
        guard cacheGeneration != index.generation, !isFanningOut else { return }
        rebuildTargets(in: index)
    }

    /// Caches the index's targets for this channel and the frame prefix of each.
    @inline(never)
    private func rebuildTargets(in index: SubscriptionIndex) {
        targets = index.targets(for: name)
        // A subscription still replaying gets this channel's events through its cursor
        // (`ReplayCursor`); it joins the targets when the replay ends and resets the cache.
        // A closing session's subscriptions stay in the index until its teardown reaches
        // them (`Broker+Teardown`): retired ones are left out here.
        if targets.contains(where: { if case .single(let s) = $0 { s.isReplaying || !s.isActive } else { false } }) {
            targets.removeAll { if case .single(let s) = $0 { s.isReplaying || !s.isActive } else { false } }
        }
        prefixArena.removeAll(keepingCapacity: true)
        var lastPlain: Range<Int>?
        fastTargets = targets.map { target in
            switch target {
            case .single(let subscription):
                let start = prefixArena.count
                appendPrefix(for: subscription, to: &prefixArena)
                let isPlain = subscription.isPlainTarget
                var prefix = start..<prefixArena.count
                if isPlain {
                    prefix = sharedPrefix(prefix, sameAs: lastPlain)
                    lastPlain = prefix
                }
                return FastTarget(subscription: Unmanaged.passUnretained(subscription), group: nil,
                                  prefix: prefix,
                                  plainSession: isPlain ? subscription.owner : nil, isCompact: subscription.isCompact)
            case .group(let group):
                return FastTarget(subscription: nil, group: Unmanaged.passUnretained(group), prefix: 0..<0,
                                  plainSession: nil, isCompact: false)
            }
        }
        markSharedPrefixes()
        cacheGeneration = index.generation
    }

    /// `prefix` (just appended to `prefixArena`), or `previous` when its bytes are the same:
    /// the new copy is dropped and the two targets share one range. Only neighbours are
    /// compared (subscribers of one channel with the same subscription name, `s1` for each
    /// connection's first, come one after the other), so a rebuild stays linear.
    private func sharedPrefix(_ prefix: Range<Int>, sameAs previous: Range<Int>?) -> Range<Int> {
        guard let previous, previous.count == prefix.count,
              prefixArena[previous].elementsEqual(prefixArena[prefix]) else { return prefix }
        prefixArena.removeLast(prefix.count)
        return previous
    }

    /// Sets `sharesPrefix` on plain targets whose range another plain target has too.
    private func markSharedPrefixes() {
        guard fastTargets.count > 1 else { return }
        var previous = -1
        for k in fastTargets.indices where fastTargets[k].plainSession != nil {
            if previous >= 0 && fastTargets[previous].prefix == fastTargets[k].prefix {
                fastTargets[previous].sharesPrefix = true
                fastTargets[k].sharesPrefix = true
            }
            previous = k
        }
    }

    /// Appends `{"event":"CH","sub":"NAME"` for one subscription to `out`; `{"event":"CH"`
    /// for a compact one.
    func appendPrefix(for subscription: Subscription, to out: inout [UInt8]) {
        guard !subscription.isCompact else { return out.append(contentsOf: eventHead[..<compactHeadCount]) }
        out.append(contentsOf: eventHead)
        subscription.appendQuotedName(to: &out)
    }

    /// Whether the record's name equals `bytes`.
    @inline(__always)
    func hasName(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard bytes.count == name.count else { return false }
        return name.withUnsafeBytes { own in
            guard let a = own.baseAddress, let b = bytes.baseAddress else { return bytes.isEmpty }
            return RawBytes.areEqual(a, b, count: bytes.count)
        }
    }
}
