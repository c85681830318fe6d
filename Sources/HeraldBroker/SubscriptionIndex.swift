import HeraldWire

/// All subscriptions, by pattern, with the queue groups formed on each pattern.
///
/// Concrete patterns are found by one dictionary lookup; wildcard patterns are kept in a
/// separate list and tested segment by segment. Results are cached per channel (see
/// `Channel`), and `generation` rises on every change so those caches know they are stale.
final class SubscriptionIndex {
    /// Subscriptions and groups sharing one pattern.
    final class Entry {
        let pattern: [UInt8]
        let isWildcard: Bool
        var subscriptions: [Subscription] = []
        var groups: [[UInt8]: QueueGroup] = [:]

        init(pattern: [UInt8], isWildcard: Bool) {
            self.pattern = pattern
            self.isWildcard = isWildcard
        }
    }

    /// What one pattern holds. Most concrete channels have exactly one plain subscriber
    /// (one per device, per document…), so that case is the subscription itself: no `Entry`
    /// and no array, about 110 bytes less per subscription. A second subscriber, a queue
    /// group or a wildcard pattern makes it an `Entry`.
    private enum Slot {
        case one(Subscription)
        case many(Entry)

        /// Calls `body` with each subscription, in insertion order.
        @inline(__always)
        func forEach(_ body: (Subscription) -> Void) {
            switch self {
            case .one(let subscription): body(subscription)
            case .many(let entry): entry.subscriptions.forEach(body)
            }
        }

        var count: Int {
            switch self {
            case .one: return 1
            case .many(let entry): return entry.subscriptions.count
            }
        }

        var isWildcard: Bool {
            switch self {
            case .one(let subscription): return subscription.isWildcard
            case .many(let entry): return entry.isWildcard
            }
        }
    }

    private var entries: [[UInt8]: Slot] = [:]
    private var wildcardEntries: [Entry] = []
    /// Rises on every insert and removal.
    private(set) var generation = 0
    /// Number of subscriptions held.
    private(set) var count = 0

    func insert(_ subscription: Subscription) {
        if !subscription.isWildcard, subscription.group == nil, entries[subscription.pattern] == nil {
            entries[subscription.pattern] = .one(subscription)
        } else {
            let entry = entryFor(subscription.pattern, isWildcard: subscription.isWildcard)
            entry.subscriptions.append(subscription)
            if let name = subscription.group {
                let group = entry.groups[name] ?? QueueGroup()
                group.add(subscription)
                entry.groups[name] = group
            }
        }
        count += 1
        generation += 1
    }

    func remove(_ subscription: Subscription) {
        switch entries[subscription.pattern] {
        case .one(let single)? where single === subscription:
            entries[subscription.pattern] = nil
        case .many(let entry)?:
            guard let at = entry.subscriptions.firstIndex(where: { $0 === subscription }) else { return }
            entry.subscriptions.remove(at: at)
            if let name = subscription.group, let group = entry.groups[name] {
                group.remove(subscription)
                if group.isEmpty { entry.groups[name] = nil }
            }
            if entry.subscriptions.isEmpty { dropEntry(entry) }
        default:
            return
        }
        count -= 1
        generation += 1
    }

    /// The delivery targets for a concrete channel, in subscription order.
    func targets(for channel: [UInt8]) -> [Target] {
        var matched: [Subscription] = []
        channel.withUnsafeBytes { name in
            entries[channel]?.forEach { matched.append($0) }
            for entry in wildcardEntries {
                let hit = entry.pattern.withUnsafeBytes { ChannelName.matches(pattern: $0, channel: name) }
                if hit { matched.append(contentsOf: entry.subscriptions) }
            }
        }
        matched.sort { $0.serial < $1.serial }
        return targets(from: matched)
    }

    /// The concrete channels someone subscribed to exactly (for `channels`).
    var concretePatterns: [[UInt8]] {
        entries.compactMap { pattern, slot in slot.isWildcard ? nil : pattern }
    }

    /// The subscriptions whose pattern is exactly `pattern`, in insertion order.
    func subscriptions(withPattern pattern: [UInt8]) -> [Subscription] {
        var found: [Subscription] = []
        entries[pattern]?.forEach { found.append($0) }
        return found
    }

    /// How many subscriptions match a concrete channel.
    func matchCount(for channel: [UInt8]) -> Int {
        var total = entries[channel]?.count ?? 0
        channel.withUnsafeBytes { name in
            for entry in wildcardEntries {
                let hit = entry.pattern.withUnsafeBytes { ChannelName.matches(pattern: $0, channel: name) }
                if hit { total += entry.subscriptions.count }
            }
        }
        return total
    }

    private func targets(from matched: [Subscription]) -> [Target] {
        var result: [Target] = []
        result.reserveCapacity(matched.count)
        var seenGroups: [ObjectIdentifier] = []
        for subscription in matched {
            guard let name = subscription.group else {
                result.append(.single(subscription))
                continue
            }
            guard case .many(let entry)? = entries[subscription.pattern], let group = entry.groups[name] else { continue }
            let key = ObjectIdentifier(group)
            if seenGroups.contains(key) { continue }
            seenGroups.append(key)
            result.append(.group(group))
        }
        return result
    }

    /// The `Entry` for `pattern`, made (or grown from a single subscription) when needed.
    private func entryFor(_ pattern: [UInt8], isWildcard: Bool) -> Entry {
        let entry: Entry
        switch entries[pattern] {
        case .many(let existing)?:
            return existing
        case .one(let single)?:
            entry = Entry(pattern: pattern, isWildcard: isWildcard)
            entry.subscriptions.append(single)
        case nil:
            entry = Entry(pattern: pattern, isWildcard: isWildcard)
            if isWildcard { wildcardEntries.append(entry) }
        }
        entries[pattern] = .many(entry)
        return entry
    }

    private func dropEntry(_ entry: Entry) {
        entries[entry.pattern] = nil
        if entry.isWildcard, let at = wildcardEntries.firstIndex(where: { $0 === entry }) {
            wildcardEntries.remove(at: at)
        }
    }
}
