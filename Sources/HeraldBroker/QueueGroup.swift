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
        members.append(subscription)
    }

    func remove(_ subscription: Subscription) {
        guard let at = members.firstIndex(where: { $0 === subscription }) else { return }
        members.remove(at: at)
        if next > at { next -= 1 }
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
