@testable import HeraldBroker

/// The tests play the engine one kind of command at a time: each take leaves the other
/// kinds queued, in order.
extension ClusterState {
    /// Takes the queued events, in order.
    func takeOutbox() -> [Event] { take(\.event) }

    /// Takes the queued interest changes, in order.
    func takeInterest() -> [InterestChange] { take(\.interestChange) }

    /// Takes the queued script calls, in order.
    func takeCalls() -> [ScriptCall] { take(\.scriptCall) }
}

extension BrokerHarness {
    /// Plays Redis for every queued `lease` call (per-user limits across the cluster): each
    /// is granted what it asked for, so a test about something else is not parked behind
    /// one. Leaves every other queued command in place. No-op outside cluster mode.
    func grantLeases() {
        guard let cluster = broker.cluster else { return }
        while true {
            let leases = cluster.take { $0.scriptCall?.script == .lease ? $0.scriptCall : nil }
            guard !leases.isEmpty else { return }
            for call in leases {
                let wanted = call.arguments.count > 4 ? Int(String(decoding: call.arguments[4], as: UTF8.self)) ?? 1 : 1
                _ = broker.clusterCallAnswered(token: call.token, result: .array([.int(wanted)]))
            }
        }
    }
}
