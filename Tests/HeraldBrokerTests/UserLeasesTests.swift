@testable import HeraldBroker
import Testing

/// A node's grants of its users' cluster-wide limits (`UserLeases`): what it asks for, and
/// when it gives back what it does not use.
struct UserLeasesTests {
    private let key = UserLeases.Key(user: "app", kind: .subscriptions)

    @Test func chunksAreAnEighthOfTheLimitAndSmallLimitsGoOneByOne() {
        #expect(UserLeases.chunk(of: 1_000) == 125)
        #expect(UserLeases.chunk(of: 5) == 1)
        #expect(UserLeases.chunk(of: 0) == 1)
    }

    @Test func aGrantKeepsItsSurplusWhileAskedAndGivesItBackOnceIdle() {
        var leases = UserLeases()
        leases.asking(key, now: 0)
        leases.answered(key, granted: 125)
        #expect(leases.granted(key) == 125)
        #expect(leases.takeIdleSurplus(now: UserLeases.idleMs - 1) { _ in 10 }.isEmpty, "asked for just now")
        let surplus = leases.takeIdleSurplus(now: UserLeases.idleMs) { _ in 10 }
        #expect(surplus.count == 1 && surplus.first?.1 == 115)
        #expect(leases.granted(key) == 10, "what is used stays granted")
    }

    @Test func aGrantWithACallInFlightIsNotCutAndAnUnusedOneGoesWhole() {
        var leases = UserLeases()
        leases.asking(key, now: 0)
        #expect(leases.takeIdleSurplus(now: 10 * UserLeases.idleMs) { _ in 0 }.isEmpty, "a lease is in flight")
        leases.answered(key, granted: 3)
        #expect(leases.takeIdleSurplus(now: 10 * UserLeases.idleMs) { _ in 0 }.first?.1 == 3)
        #expect(leases.grants.isEmpty, "a grant given back whole leaves no entry")
    }

    @Test func aRefusedLeaseLeavesNoEntryBehind() {
        var leases = UserLeases()
        for _ in 0..<10_000 {
            leases.asking(key, now: 0)
            leases.answered(key, granted: 0)
        }
        #expect(leases.grants.isEmpty, "a hostile user's refused asks cost nothing to keep")
    }
}
