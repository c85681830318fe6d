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
