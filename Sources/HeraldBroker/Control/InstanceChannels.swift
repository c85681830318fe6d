/// Which connection owns which instance channel (PROTOCOL.md, "Instance channels").
///
/// An instance channel lives and dies with its owner: `declare` registers it here, and the
/// owner's `remove` or disconnect takes it out (see `Broker+Instances.swift`).
///
/// Every operation costs what it touches (issue 12): one claim is made or released in O(1),
/// and ALL of an owner's claims end in O(1) (`releaseAll`): each claim records the owner's
/// generation when it was made, and ending them bumps that generation, so every older claim
/// reads as released at once. The stale entries are swept later, a slice per loop pass, by
/// whoever finishes the removals (`forgetStaleClaim`). Releasing 40,000 channels one by one
/// held the loop 33.8 s when this was a list (quadratic), and 67 ms as a dictionary.
final class InstanceChannels {
    /// One owner's claim on a name.
    private struct Claim {
        let owner: ConnectionID
        let generation: Int
    }

    /// One owner's current claims in declaration order; removed ones leave a nil slot.
    struct OwnedNames {
        var order: [[UInt8]?] = []
        var position = NameTable<Int>()

        var count: Int { position.count }

        mutating func append(_ name: [UInt8]) {
            position[name] = order.count
            order.append(name)
        }

        mutating func remove(_ name: [UInt8]) {
            guard let at = position.removeValue(forKey: name) else { return }
            order[at] = nil
            if order.count > 64 && position.count * 2 < order.count { compact() }
        }

        var names: [[UInt8]] { order.compactMap { $0 } }

        /// How many slots (names and holes) `takeNext` goes through.
        var slots: Int { order.count }

        /// Hands out the name in slot `at` (nil for a hole) and empties the slot; every
        /// 64th of the way it frees one shard of the position table too, so an owner of
        /// 400,000 names is freed a slice at a time, never in one go (issue 12).
        mutating func take(at: Int) -> [UInt8]? {
            let name = order[at]
            order[at] = nil
            if at % Swift.max(1, order.count / 64) == 0 { position.dropOneShard() }
            return name
        }

        private mutating func compact() {
            order = order.compactMap { $0 }
            for (at, name) in order.enumerated() { if let name { position[name] = at } }
        }
    }

    private var claims = NameTable<Claim>()
    /// Each owner's current generation; absent once it left (then all its claims are stale).
    private var generations: [ConnectionID: Int] = [:]
    private var byOwner: [ConnectionID: OwnedNames] = [:]

    /// How many instance channels exist (current claims).
    private(set) var count = 0

    /// How many instance channels a connection owns (`max_declared`).
    func count(ownedBy owner: ConnectionID) -> Int { byOwner[owner]?.count ?? 0 }

    /// The owner of a channel, or nil when it is not an instance channel (now).
    func owner(of name: [UInt8]) -> ConnectionID? {
        guard let claim = claims[name], generations[claim.owner] == claim.generation else { return nil }
        return claim.owner
    }

    /// Records `owner` as the channel's owner; the caller checked nobody owns it now.
    func declare(_ name: [UInt8], by owner: ConnectionID) {
        guard self.owner(of: name) == nil else { return }
        let generation: Int
        if let known = generations[owner] {
            generation = known
        } else {
            generation = 0
            generations[owner] = 0
        }
        claims[name] = Claim(owner: owner, generation: generation)
        byOwner[owner, default: OwnedNames()].append(name)
        count += 1
    }

    /// Forgets one channel's ownership in O(1).
    func release(_ name: [UInt8]) {
        guard let owner = owner(of: name) else { return }
        claims[name] = nil
        byOwner[owner]?.remove(name)
        if byOwner[owner]?.count == 0 { byOwner[owner] = nil }
        count -= 1
    }

    /// Ends every claim of `owner` at once; `leaving` forgets the owner too.
    /// - Returns: the names it owned, in declaration order (`OwnedNames.take(at:)`, nil slots
    ///   skipped), for the caller to finish removing (each with `forgetStaleClaim`); moved,
    ///   not copied, so this costs O(1) whatever the owner held.
    func releaseAll(of owner: ConnectionID, leaving: Bool) -> OwnedNames? {
        let owned = byOwner.removeValue(forKey: owner)
        if leaving {
            generations[owner] = nil
        } else if owned != nil {
            generations[owner, default: 0] += 1
        }
        guard let owned else { return nil }
        count -= owned.count
        return owned
    }

    /// Drops `name`'s claim if it is a stale one of `owner` (ended by `releaseAll`).
    /// - Returns: false when the name was declared again since (then it is not removed).
    func forgetStaleClaim(_ name: [UInt8], of owner: ConnectionID) -> Bool {
        guard let claim = claims[name], claim.owner == owner, generations[owner] != claim.generation else { return false }
        claims[name] = nil
        return true
    }

    /// The channels a connection owns, in declaration order.
    func owned(by owner: ConnectionID) -> [[UInt8]] {
        byOwner[owner]?.names ?? []
    }
}
