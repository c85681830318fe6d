/// A queue group: subscriptions with the same group name and the same pattern.
///
/// Each event goes to exactly one member, round robin, skipping members that may not
/// receive it (their connection asked for `echo:false`, or is closing).
final class QueueGroup {
    /// Members in join order.
    private(set) var members: [Subscription] = []
    private var next = 0

    var isEmpty: Bool { members.isEmpty }

    func add(_ subscription: Subscription) {
        subscription.groupPosition = members.count
        members.append(subscription)
    }

    /// Removes a member in O(1): the last member takes its slot, so a group of 100k members
    /// of one departing connection empties in linear time. The turn order of the remaining
    /// members changes once; round robin stays fair.
    func remove(_ subscription: Subscription) {
        let at = subscription.groupPosition
        guard at >= 0, at < members.count, members[at] === subscription else { return }
        let last = members.removeLast()
        if last !== subscription {
            members[at] = last
            last.groupPosition = at
        }
        subscription.groupPosition = -1
        if next >= members.count { next = 0 }
    }

    /// The next member in turn that `accepts`, advancing the turn past it.
    /// - Parameter accepts: whether a member may receive this event.
    /// - Returns: the chosen member, or nil when none accepts.
    func pick(_ accepts: (Subscription) -> Bool) -> Subscription? {
        let count = members.count
        guard count > 0 else { return nil }
        for step in 0..<count {
            let at = (next + step) % count
            let member = members[at]
            if accepts(member) {
                next = (at + 1) % count
                return member
            }
        }
        return nil
    }
}
