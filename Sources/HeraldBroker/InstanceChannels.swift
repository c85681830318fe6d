/// Which connection owns which instance channel (PROTOCOL.md, "Instance channels").
///
/// An instance channel lives and dies with its owner: `declare` registers it here, and the
/// owner's `remove` or disconnect takes it out (see `Broker+Instances.swift`). Each owner's
/// channels are a dictionary to their declaration number, so releasing one is O(1) and
/// releasing all of a connection's k channels is O(k log k) (issue 12: it was a linear
/// `removeAll` per name, 33.8 s for 40,000 channels).
final class InstanceChannels {
    private var owners: [[UInt8]: ConnectionID] = [:]
    /// Each owner's channels, with a number giving their declaration order.
    private var byOwner: [ConnectionID: [[UInt8]: Int]] = [:]
    private var nextNumber = 0

    /// How many instance channels exist.
    var count: Int { owners.count }

    /// How many instance channels a connection owns (`max_declared`).
    func count(ownedBy owner: ConnectionID) -> Int { byOwner[owner]?.count ?? 0 }

    /// The owner of a channel, or nil when it is not an instance channel.
    func owner(of name: [UInt8]) -> ConnectionID? {
        owners[name]
    }

    /// Records `owner` as the channel's owner; the caller checked there is no other.
    func declare(_ name: [UInt8], by owner: ConnectionID) {
        guard owners[name] == nil else { return }
        owners[name] = owner
        nextNumber += 1
        byOwner[owner, default: [:]][name] = nextNumber
    }

    /// Forgets a channel's ownership in O(1).
    func release(_ name: [UInt8]) {
        guard let owner = owners.removeValue(forKey: name) else { return }
        byOwner[owner]?[name] = nil
        if byOwner[owner]?.isEmpty == true { byOwner[owner] = nil }
    }

    /// The channels a connection owns, in declaration order.
    func owned(by owner: ConnectionID) -> [[UInt8]] {
        guard let owned = byOwner[owner] else { return [] }
        return owned.sorted { $0.value < $1.value }.map(\.key)
    }
}
