import Testing
@testable import HeraldServer

/// The loop pass's line budget (`Worker.passBudget`): `pass_budget_us`, stretched when the
/// pass before spent long writing (high fan-out, issue 16), never past its cap.
@Suite struct PassBudgetTests {
    let base: UInt64 = 1_000_000  // the default 1 ms, in ns

    @Test func aPassWithFewWritesKeepsThePlainBudget() {
        #expect(Worker.passBudget(base: base, lastWriteNs: 0) == base)
        #expect(Worker.passBudget(base: base, lastWriteNs: base / Worker.linesPerWriteTime) == base)
    }

    @Test func longWritesStretchTheBudgetToAFixedMultipleOfTheirTime() {
        let writes: UInt64 = 3_000_000
        #expect(Worker.passBudget(base: base, lastWriteNs: writes) == writes * Worker.linesPerWriteTime)
        #expect(Worker.linesPerWriteTime >= 2, "lines must outweigh the writes they cause")
    }

    @Test func theStretchStopsAtItsCapSoAPassStaysBounded() {
        let cap = base * Worker.maxBudgetStretch
        #expect(Worker.passBudget(base: base, lastWriteNs: 20_000_000) == cap)
        #expect(Worker.passBudget(base: base, lastWriteNs: 60_000_000_000) == cap)
        #expect(Worker.passBudget(base: 100_000, lastWriteNs: 60_000_000_000) == 100_000 * Worker.maxBudgetStretch)
    }

    @Test func aZeroBudgetStaysUnlimited() {
        #expect(Worker.passBudget(base: 0, lastWriteNs: 20_000_000) == 0)
    }
}
