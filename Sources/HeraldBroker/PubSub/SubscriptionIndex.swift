import HeraldWire

/// All subscriptions, by pattern, with the queue groups formed on each pattern.
///
/// Concrete patterns are found by one dictionary lookup; wildcard patterns are also kept in
/// a `PatternTrie`, so matching a channel walks only the branches that can match it (a
/// million wildcard subscriptions of one user cost another user's publish nothing). Results
/// are cached per channel (see `Channel`), and `generation` rises on every change so those
/// caches know they are stale. Removal is O(1): each subscription knows its slot in its
/// entry (`Subscription.entryPosition`), and order is restored by `serial` when targets are
/// computed, so a connection holding 100k subscriptions on one pattern leaves in linear time.
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
    /// group or a wildcard pattern makes it an `Entry`. `probe` is never stored: it is the
    /// pattern being looked up in `PatternSlots`, which hashes and compares slots by pattern.
    enum Slot: Hashable {
        case one(Subscription)
        case many(Entry)
        case probe([UInt8])

        /// The pattern it is kept under.
        var pattern: [UInt8] {
            switch self {
            case .one(let subscription): return subscription.pattern
            case .many(let entry): return entry.pattern
            case .probe(let pattern): return pattern
            }
        }

        /// Calls `body` with each subscription, in insertion order.
        @inline(__always)
        func forEach(_ body: (Subscription) -> Void) {
            switch self {
            case .one(let subscription): body(subscription)
            case .many(let entry): entry.subscriptions.forEach(body)
            case .probe: break
            }
        }

        var count: Int {
            switch self {
            case .one: return 1
            case .many(let entry): return entry.subscriptions.count
            case .probe: return 0
            }
        }

        func hash(into hasher: inout Hasher) {
            pattern.withUnsafeBytes { hasher.combine(bytes: $0) }
        }

        static func == (a: Slot, b: Slot) -> Bool {
            a.pattern == b.pattern
        }
    }

    private var entries = PatternSlots()
    /// The wildcard entries, by pattern segment.
    private let wildcardEntries = PatternTrie<Entry>()
    /// How many distinct concrete patterns have subscriptions (for `stats`-style counters).
    private(set) var concretePatternCount = 0
    /// Rises on every insert and removal.
    private(set) var generation = 0

    /// Makes every channel rebuild its cached targets (a subscription left or joined
    /// live delivery without an insert or a removal).
    func invalidateTargets() {
        generation += 1
    }
    /// Number of subscriptions held.
    private(set) var count = 0

    /// Adds a subscription. - Returns: true when its pattern had no subscription before.
    @discardableResult
    func insert(_ subscription: Subscription) -> Bool {
        let isNewPattern = entries[subscription.pattern] == nil
        if isNewPattern && !subscription.isWildcard { concretePatternCount += 1 }
        if !subscription.isWildcard, subscription.group == nil, isNewPattern {
            entries[subscription.pattern] = .one(subscription)
        } else {
            let entry = entryFor(subscription.pattern, isWildcard: subscription.isWildcard)
            subscription.entryPosition = entry.subscriptions.count
            entry.subscriptions.append(subscription)
            if let name = subscription.group {
                let group = entry.groups[name] ?? QueueGroup()
                group.add(subscription)
                entry.groups[name] = group
            }
        }
        count += 1
        generation += 1
        return isNewPattern
    }

    /// Removes a subscription in O(1). - Returns: true when its pattern has none left.
    @discardableResult
    func remove(_ subscription: Subscription) -> Bool {
        var patternGone = false
        switch entries[subscription.pattern] {
        case .one(let single)? where single === subscription:
            entries[subscription.pattern] = nil
            patternGone = true
        case .many(let entry)?:
            let at = subscription.entryPosition
            guard at >= 0, at < entry.subscriptions.count, entry.subscriptions[at] === subscription else { return false }
            let last = entry.subscriptions.removeLast()
            if last !== subscription {
                entry.subscriptions[at] = last
                last.entryPosition = at
            }
            subscription.entryPosition = -1
            if let name = subscription.group, let group = entry.groups[name] {
                group.remove(subscription)
                if group.isEmpty { entry.groups[name] = nil }
            }
            if entry.subscriptions.isEmpty {
                dropEntry(entry)
                patternGone = true
            }
        default:
            return false
        }
        if patternGone && !subscription.isWildcard { concretePatternCount -= 1 }
        count -= 1
        generation += 1
        return patternGone
    }

    /// Every pattern with at least one subscription (concrete channels and wildcard
    /// patterns), in no particular order: what a cluster node registers again after Redis
    /// lost its interest sets. Costs the number of patterns.
    func allPatterns() -> [[UInt8]] {
        var patterns = entries.keys
        wildcardEntries.forEachValue { pattern, _ in patterns.append(pattern) }
        return patterns
    }

    /// The delivery targets for a concrete channel, in subscription order.
    func targets(for channel: [UInt8]) -> [Target] {
        var matched: [Subscription] = []
        entries[channel]?.forEach { matched.append($0) }
        forEachWildcardEntry(matching: channel) { matched.append(contentsOf: $0.subscriptions) }
        matched.sort { $0.serial < $1.serial }
        return targets(from: matched)
    }

    /// Calls `body` with each wildcard entry whose pattern matches the concrete `channel`.
    private func forEachWildcardEntry(matching channel: [UInt8], _ body: (Entry) -> Void) {
        wildcardEntries.forEachMatch(of: channel) { pattern, entry in
            if ChannelName.matches(pattern: pattern, channel: channel) { body(entry) }
        }
    }

    /// Whether someone subscribed to exactly this concrete channel.
    func hasSubscriptions(withPattern pattern: [UInt8]) -> Bool {
        entries[pattern] != nil
    }

    /// The subscriptions on wildcard patterns that overlap `pattern` (some channel matches
    /// both), visiting only the trie branches `pattern` opens.
    /// - Parameters:
    ///   - pattern: a valid pattern or concrete name.
    ///   - body: called per subscription; returns false to stop the walk early.
    /// - Parameter budget: the most wildcard patterns looked at.
    /// - Returns: false when it stopped on `budget` with patterns left (the walk was cut).
    @discardableResult
    func forEachWildcardSubscription(overlapping pattern: [UInt8], budget: Int = .max,
                                     _ body: (Subscription) -> Bool) -> Bool {
        var going = true
        var looked = 0
        var cut = false
        wildcardEntries.forEachOverlap(with: pattern) { stored, entry in
            guard looked < budget else {
                cut = true
                return false
            }
            looked += 1
            guard ChannelName.overlaps(stored, pattern) else { return true }
            for subscription in entry.subscriptions where going { going = body(subscription) }
            return going
        }
        return !cut
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
        forEachWildcardEntry(matching: channel) { total += $0.subscriptions.count }
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

    /// How many subscriptions on exactly `pattern` are in no queue group (cluster mode
    /// registers a pattern's plain interest while this is above 0). Costs the pattern's groups.
    func plainCount(withPattern pattern: [UInt8]) -> Int {
        switch entries[pattern] {
        case .one?: return 1
        case .many(let entry)?: return entry.subscriptions.count - entry.groups.values.reduce(0) { $0 + $1.members.count }
        case .probe?, nil: return 0
        }
    }

    /// The queue group `name` on exactly `pattern`, when it has members.
    func group(withPattern pattern: [UInt8], named name: [UInt8]) -> QueueGroup? {
        guard case .many(let entry)? = entries[pattern] else { return nil }
        return entry.groups[name]
    }

    /// Every queue group with its pattern and member count, in no particular order: what a
    /// cluster node registers again after Redis lost its interest. Costs the patterns.
    func allGroups() -> [(pattern: [UInt8], name: [UInt8], members: Int)] {
        var found: [(pattern: [UInt8], name: [UInt8], members: Int)] = []
        for pattern in allPatterns() {
            guard case .many(let entry)? = entries[pattern] else { continue }
            for (name, group) in entry.groups { found.append((pattern, name, group.members.count)) }
        }
        return found
    }

    /// The `Entry` for `pattern`, made (or grown from a single subscription) when needed.
    private func entryFor(_ pattern: [UInt8], isWildcard: Bool) -> Entry {
        let entry: Entry
        switch entries[pattern] {
        case .many(let existing)?:
            return existing
        case .one(let single)?:
            entry = Entry(pattern: pattern, isWildcard: isWildcard)
            single.entryPosition = 0
            entry.subscriptions.append(single)
        case .probe?, nil:
            entry = Entry(pattern: pattern, isWildcard: isWildcard)
            if isWildcard { wildcardEntries.insert(entry, at: pattern) }
        }
        entries[pattern] = .many(entry)
        return entry
    }

    private func dropEntry(_ entry: Entry) {
        entries[entry.pattern] = nil
        if entry.isWildcard { wildcardEntries.removeValue(at: entry.pattern) }
    }
}
