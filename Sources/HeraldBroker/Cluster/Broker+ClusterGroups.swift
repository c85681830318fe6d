import HeraldWire

/// Queue groups and plain interest in cluster mode (docs/cluster.md, "Queue groups").
///
/// A node tells the others two kinds of interest: a pattern with at least one local
/// subscriber outside any group (events on it come to the node for those), and, per queue
/// group on a pattern, how many members the group has here. The publish script reads the
/// member counts of every matching group in Redis, turns the group's counter, and names the
/// one node that delivers; that node gives the event to one local member, its own round
/// robin. So one member per group per event, round robin over the whole cluster's members.
extension Broker {
    /// After `index.insert`: a pattern's first plain subscriber here, or a group's member
    /// count here, is interest to tell the other nodes; the first member of a group on this
    /// node (like a pattern's first subscriber) holds the `sub` answer until every node has
    /// seen it.
    func clusterSubscribed(_ subscription: Subscription) {
        guard let cluster else { return }
        if subscription.isHandler { clusterHandlerAdded(subscription) }
        let pattern = subscription.pattern
        guard let group = subscription.group else {
            if index.plainCount(withPattern: pattern) == 1 {
                clusterInterestAdded(pattern, for: subscription.session)
            } else {
                // The pattern's registration may still be on its way to the other nodes.
                let ticket = cluster.pendingTicket(for: pattern)
                guard ticket > 0 else { return }
                let session = subscription.session
                if session.barriers.isEmpty { retention.heldSessions.append(session) }
                session.holdOutput(untilTicket: ticket)
            }
            return
        }
        let members = index.group(withPattern: pattern, named: group)?.members.count ?? 0
        let ticket = cluster.groupChanged(pattern, group: group, members: members, joined: true)
        guard ticket > 0 else { return }
        let session = subscription.session
        if session.barriers.isEmpty { retention.heldSessions.append(session) }
        session.holdOutput(untilTicket: ticket)
    }

    /// After `index.remove` (or a retire of a subscription already gone: the counts are read
    /// from the index, so telling twice is harmless).
    func clusterUnsubscribed(_ subscription: Subscription) {
        guard let cluster else { return }
        if subscription.isHandler { clusterHandlerRemoved(subscription) }
        let pattern = subscription.pattern
        guard let group = subscription.group else {
            if index.plainCount(withPattern: pattern) == 0 { clusterInterestRemoved(pattern) }
            return
        }
        let members = index.group(withPattern: pattern, named: group)?.members.count ?? 0
        _ = cluster.groupChanged(pattern, group: group, members: members, joined: false)
    }

    /// Every queue group here with its pattern and member count, for registering again
    /// after the cluster's Redis came back.
    public func localGroupMemberships() -> [(pattern: [UInt8], group: [UInt8], members: Int)] {
        index.allGroups().map { ($0.pattern, $0.name, $0.members) }
    }

    /// Delivers an event from Redis to one member here of each group Redis picked for this
    /// node (`PATTERN GROUP` entries) whose pattern matches the channel: the rest of
    /// `fanOut` in cluster mode, inside its loop's guard. A group with no member here that
    /// may take the event (its last one just left, or the only one is the publisher with
    /// `echo:false`) does not get it.
    /// - Returns: how many subscriptions received it.
    func deliverToPickedGroups(_ groups: [[UInt8]], on channel: Channel, publisherID publisher: ConnectionID) -> Int {
        var receivers = 0
        for entry in groups {
            guard let (pattern, name) = InterestTable.groupEntry(entry),
                  pattern == channel.name || ChannelName.matches(pattern: pattern, channel: channel.name),
                  let group = index.group(withPattern: pattern, named: name),
                  let member = group.pick({ !$0.isReplaying && accepts($0, from: publisher, on: channel) }) else { continue }
            groupPrefix.removeAll(keepingCapacity: true)
            channel.appendPrefix(for: member, to: &groupPrefix)
            if groupPrefix.withUnsafeBytes({ deliver(to: member, prefix: $0) }) { receivers += 1 }
        }
        return receivers
    }
}
