/// Which connection owns which instance channel (PROTOCOL.md, "Instance channels").
///
/// An instance channel lives and dies with its owner: `declare` registers it here, and the
/// owner's `remove` or disconnect takes it out (see `Broker+Instances.swift`).
final class InstanceChannels {
    private var owners: [[UInt8]: ConnectionID] = [:]
    /// Each owner's channels in declaration order, so `remove {all:true}` and a
    /// disconnect remove them in a predictable order.
    private var byOwner: [ConnectionID: [[UInt8]]] = [:]

    /// How many instance channels exist.
    var count: Int { owners.count }

    /// The owner of a channel, or nil when it is not an instance channel.
    func owner(of name: [UInt8]) -> ConnectionID? {
        owners[name]
    }

    /// Records `owner` as the channel's owner; the caller checked there is no other.
    func declare(_ name: [UInt8], by owner: ConnectionID) {
        guard owners[name] == nil else { return }
        owners[name] = owner
        byOwner[owner, default: []].append(name)
    }

    /// Forgets a channel's ownership.
    func release(_ name: [UInt8]) {
        guard let owner = owners.removeValue(forKey: name) else { return }
        byOwner[owner]?.removeAll { $0 == name }
        if byOwner[owner]?.isEmpty == true { byOwner[owner] = nil }
    }

    /// The channels a connection owns, in declaration order.
    func owned(by owner: ConnectionID) -> [[UInt8]] {
        byOwner[owner] ?? []
    }
}
