import HeraldWire

/// Names a subscription across connections: the holder's connection and the name, the
/// parsed form of a global id `CLIENT/NAME`.
///
/// Locks name subscriptions by this key rather than by object, so a lock outlives the
/// subscription being replaced by a new `sub` with the same name.
struct SubscriptionKey: Hashable {
    /// The holder's connection.
    let client: ConnectionID
    /// The subscription's name within that connection.
    let name: [UInt8]

    /// Parses `cN/NAME`; the name is everything after the first `/` and may hold more.
    /// - Returns: nil when the text is not a global id.
    init?(globalID bytes: [UInt8]) {
        guard let slash = bytes.firstIndex(of: UInt8(ascii: "/")), slash >= 2, slash < bytes.count - 1,
              bytes[0] == UInt8(ascii: "c") else { return nil }
        var client = 0
        for byte in bytes[1..<slash] {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9"), client < Int.max / 100 else { return nil }
            client = client * 10 + Int(byte - UInt8(ascii: "0"))
        }
        self.client = client
        self.name = Array(bytes[(slash + 1)...])
    }

    init(client: ConnectionID, name: [UInt8]) {
        self.client = client
        self.name = name
    }

    /// The key of a live subscription.
    init(_ subscription: Subscription) {
        self.init(client: subscription.session.id, name: subscription.name)
    }

    /// Hashes the name's bytes in one call: the synthesized hash feeds them one by one,
    /// which dominated taking and releasing locks by the hundred thousand.
    func hash(into hasher: inout Hasher) {
        hasher.combine(client)
        name.withUnsafeBytes { hasher.combine(bytes: $0) }
    }

    /// `cN/NAME`.
    var globalID: [UInt8] {
        var id: [UInt8] = [UInt8(ascii: "c")]
        id.appendInt(client)
        id.append(UInt8(ascii: "/"))
        id.append(contentsOf: name)
        return id
    }

    /// Appends `"cN/NAME"` as a JSON string.
    func appendQuoted(to out: inout [UInt8]) {
        out.appendJSONString(globalID)
    }
}

/// One lock held by one connection.
///
/// - `pattern` set, `subscription` nil: every subscription, for events on channels matching
///   `pattern` (`lock {ch}`).
/// - both set: that subscription, for events on channels matching `pattern`
///   (`lock {ch, subs}`).
/// - `pattern` nil, `subscription` set: that subscription, on every channel (`lock {sub}`).
struct Lock: Hashable {
    /// The connection that took it; it is released when that connection goes.
    let owner: ConnectionID
    /// The channels it covers, or nil for all of them.
    let pattern: [UInt8]?
    /// The subscription it covers, or nil for all of them.
    let subscription: SubscriptionKey?

    /// Hashes the pattern's bytes in one call (see `SubscriptionKey.hash(into:)`).
    func hash(into hasher: inout Hasher) {
        hasher.combine(owner)
        if let pattern {
            hasher.combine(pattern.count)
            pattern.withUnsafeBytes { hasher.combine(bytes: $0) }
        } else {
            hasher.combine(-1)
        }
        hasher.combine(subscription)
    }
}

/// Every lock in the broker, indexed for the delivery decision and for release.
///
/// A set, so one connection taking the same lock twice holds it once (one `unlock`
/// releases it), while equal locks of two connections are distinct entries: a delivery is
/// suppressed while any of them holds. Every operation costs what it touches (issue 12):
/// locks are indexed by pattern (`PatternSet`), so the delivery check walks only patterns
/// that can match the channel, and release is O(1) per lock, so a connection holding a
/// million locks leaves in linear time.
final class LockTable {
    /// Each owner's locks. There is no daemon-wide set of locks: a lock names its owner, so
    /// the owner's set answers "is it held?", and no table grows past one connection's
    /// `max_locks` (a set of a million locks stalled the loop for its rehash while growing),
    /// and each owner's set is sharded, so not even one connection's set grows in one go.
    private var byOwner: [ConnectionID: ShardedSet<Lock>] = [:]
    /// Patterns of the locks covering every subscription.
    private var channelWide = PatternSet()
    /// Patterns (nil: every channel) of the locks naming one subscription.
    private var bySubscription: [SubscriptionKey: PatternSet] = [:]
    /// Rises on every change, so a per-channel memo knows it is stale.
    private(set) var generation = 0
    /// The channel `memoCoversAll` was computed for, at `memoGeneration`.
    private var memoChannel: Channel?
    private var memoGeneration = -1
    private var memoCoversAll = false

    /// How many locks are held; zero makes the delivery check free. Stored (kept equal to
    /// the sum of the owners' sets) so the per-delivery test is one load.
    private(set) var count = 0

    /// How many locks a connection holds (`max_locks`).
    func count(ownedBy owner: ConnectionID) -> Int { byOwner[owner]?.count ?? 0 }

    /// Every connection holding a lock (in cluster mode, other nodes' too), in no order.
    var owners: [ConnectionID] { Array(byOwner.keys) }

    /// The locks a connection holds, in no particular order.
    func owned(by owner: ConnectionID) -> [Lock] { byOwner[owner]?.elements ?? [] }

    /// Whether exactly this lock is held.
    func holds(_ lock: Lock) -> Bool { byOwner[lock.owner]?.contains(lock) ?? false }

    /// Takes a lock. - Returns: false when the owner already held it.
    @discardableResult
    func add(_ lock: Lock) -> Bool {
        guard byOwner[lock.owner, default: ShardedSet()].insert(lock) else { return false }
        count += 1
        if let key = lock.subscription {
            bySubscription[key, default: PatternSet()].insert(lock.pattern)
        } else {
            channelWide.insert(lock.pattern)
        }
        generation += 1
        return true
    }

    /// Releases a lock. - Returns: false when it was not held.
    @discardableResult
    func remove(_ lock: Lock) -> Bool {
        guard byOwner[lock.owner]?.remove(lock) == true else { return false }
        if byOwner[lock.owner]?.isEmpty == true { byOwner[lock.owner] = nil }
        releaseDetached(lock)
        return true
    }

    /// Takes a departing connection's locks out of its owner set in O(1); they keep
    /// suppressing deliveries until each is released with `releaseDetached`, a slice per
    /// loop pass (`Broker+Teardown.swift`).
    /// - Returns: the detached locks, shard by shard.
    func detachAll(ownedBy owner: ConnectionID) -> [Set<Lock>] {
        guard var owned = byOwner.removeValue(forKey: owner) else { return [] }
        return owned.takeShards()
    }

    /// Releases one lock out of the delivery indexes; its owner set no longer holds it
    /// (`remove` took it out, or `detachAll` took them all).
    func releaseDetached(_ lock: Lock) {
        count -= 1
        if let key = lock.subscription {
            bySubscription[key]?.remove(lock.pattern)
            if bySubscription[key]?.isEmpty == true { bySubscription[key] = nil }
        } else {
            channelWide.remove(lock.pattern)
        }
        generation += 1
    }

    /// Whether any lock names this subscription (so the delivery check must look closer).
    func names(_ key: SubscriptionKey) -> Bool {
        bySubscription[key] != nil
    }

    /// Whether a channel-wide lock covers every delivery of an event on `channel`.
    ///
    /// Memoized per channel and lock generation: a fan-out asks once per target, and the
    /// answer is the same for all of them.
    func coversAll(_ channel: Channel) -> Bool {
        if memoChannel !== channel || memoGeneration != generation {
            memoChannel = channel
            memoGeneration = generation
            memoCoversAll = coversAll(named: channel.name)
        }
        return memoCoversAll
    }

    /// Whether a channel-wide lock covers events on the channel with this name.
    func coversAll(named name: [UInt8]) -> Bool {
        !channelWide.isEmpty && channelWide.matches(name)
    }

    /// Whether a lock naming this subscription covers events on `name`.
    func covers(_ key: SubscriptionKey, named name: [UInt8]) -> Bool {
        bySubscription[key]?.matches(name) ?? false
    }

    /// Forgets the memoized channel, so a removed channel is not kept alive by it.
    func forgetMemo() {
        memoChannel = nil
        memoGeneration = -1
    }
}
