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

    private var entries: [[UInt8]: Entry] = [:]
    private var wildcardEntries: [Entry] = []
    /// Rises on every insert and removal.
    private(set) var generation = 0
    /// Number of subscriptions held.
    private(set) var count = 0

    func insert(_ subscription: Subscription) {
        let entry = entryFor(subscription.pattern, isWildcard: subscription.isWildcard)
        entry.subscriptions.append(subscription)
        if let name = subscription.group {
            let group = entry.groups[name] ?? QueueGroup()
            group.add(subscription)
            entry.groups[name] = group
        }
        count += 1
        generation += 1
    }

    func remove(_ subscription: Subscription) {
        guard let entry = entries[subscription.pattern],
              let at = entry.subscriptions.firstIndex(where: { $0 === subscription }) else { return }
        entry.subscriptions.remove(at: at)
        if let name = subscription.group, let group = entry.groups[name] {
            group.remove(subscription)
            if group.isEmpty { entry.groups[name] = nil }
        }
        if entry.subscriptions.isEmpty { dropEntry(entry) }
        count -= 1
        generation += 1
    }

    /// The delivery targets for a concrete channel, in subscription order.
    func targets(for channel: [UInt8]) -> [Target] {
        var matched: [Subscription] = []
        channel.withUnsafeBytes { name in
            if let exact = entries[channel] { matched.append(contentsOf: exact.subscriptions) }
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
        entries.values.filter { !$0.isWildcard }.map(\.pattern)
    }

    /// The subscriptions whose pattern is exactly `pattern`, in insertion order.
    func subscriptions(withPattern pattern: [UInt8]) -> [Subscription] {
        entries[pattern]?.subscriptions ?? []
    }

    /// How many subscriptions match a concrete channel.
    func matchCount(for channel: [UInt8]) -> Int {
        var total = entries[channel]?.subscriptions.count ?? 0
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
            guard let group = entries[subscription.pattern]?.groups[name] else { continue }
            let key = ObjectIdentifier(group)
            if seenGroups.contains(key) { continue }
            seenGroups.append(key)
            result.append(.group(group))
        }
        return result
    }

    private func entryFor(_ pattern: [UInt8], isWildcard: Bool) -> Entry {
        if let entry = entries[pattern] { return entry }
        let entry = Entry(pattern: pattern, isWildcard: isWildcard)
        entries[pattern] = entry
        if isWildcard { wildcardEntries.append(entry) }
        return entry
    }

    private func dropEntry(_ entry: Entry) {
        entries[entry.pattern] = nil
        if entry.isWildcard, let at = wildcardEntries.firstIndex(where: { $0 === entry }) {
            wildcardEntries.remove(at: at)
        }
    }
}
