/// One piece of work the broker queued for the cluster engine (`ClusterState.commands`), in
/// the order the broker queued it: the engine sends the interest changes of a pass first,
/// then the events and script calls in their order, consecutive events as one `publish`.
public enum ClusterCommand: Sendable {
    /// An event (or a message for another node's channel) to publish.
    case event(ClusterState.Event)
    /// A change of this node's interest, groups, locks or signal handlers.
    case interest(ClusterState.InterestChange)
    /// A script call, maybe with a parked request waiting for its answer.
    case call(ClusterState.ScriptCall)

    /// The event, if this is one.
    public var event: ClusterState.Event? {
        if case .event(let event) = self { return event }
        return nil
    }

    /// The interest change, if this is one.
    public var interestChange: ClusterState.InterestChange? {
        if case .interest(let change) = self { return change }
        return nil
    }

    /// The script call, if this is one.
    public var scriptCall: ClusterState.ScriptCall? {
        if case .call(let call) = self { return call }
        return nil
    }

    /// Changes the script call in place, without copying its arguments (a `.call` only).
    mutating func updateCall(_ change: (inout ClusterState.ScriptCall) -> Void) {
        guard case .call(var call) = self else { return }
        // Leaves `call` the only reference to its arguments while it changes.
        self = .interest(ClusterState.InterestChange(pattern: [], added: false, ticket: 0))
        change(&call)
        self = .call(call)
    }

    /// Changes the interest change in place, without copying its records (an `.interest` only).
    mutating func updateInterest(_ change: (inout ClusterState.InterestChange) -> Void) {
        guard case .interest(var interest) = self else { return }
        // Leaves `interest` the only reference to its records while it changes.
        self = .interest(ClusterState.InterestChange(pattern: [], added: false, ticket: 0))
        change(&interest)
        self = .interest(interest)
    }
}
