import CLibUV

/// How long one connection's lines may run in one loop pass before the others get theirs.
///
/// Why: libuv hands a readable connection up to 32 reads of 64 KiB in a row, and every line
/// of each was handled at once, so one client pipelining cheap but numerous ops (400,000
/// `declare`s, a million `lock`s over ten connections) held the loop for everyone for as long
/// as its flood took (issue 12). Past `pass_budget_us` (default 1 ms: ten flooding connections then cost
/// another client's round trip about 10-20 ms; 0 turns it off) of its own lines in one pass, a
/// connection stops reading and holds the rest of its read (at most one read buffer); the
/// worker hands it another budget in the next pass (`Worker.yielded`), after every other
/// connection's reads of that pass. The clock is read once per 32 lines, so a steady
/// publisher pays a few nanoseconds per line; a 64 KiB read of small publishes takes well
/// under the budget and is never split.
extension Connection {
    /// Lines between two looks at the clock.
    static let linesPerClockRead = 32

    /// Called after each line by the framer: whether this pass's budget is spent.
    ///
    /// Per line it costs an increment and a mask; every 32nd line it looks at the pass
    /// number (a new pass starts a new budget) and the clock.
    func hasSpentBudget() -> Bool {
        budgetLines &+= 1
        guard budgetLines & (Connection.linesPerClockRead - 1) == 0 else { return false }
        let pass = worker.pass
        if budgetPass != pass {
            budgetPass = pass
            budgetStart = uv_hrtime()
            return false
        }
        let budget = worker.server.passBudgetNs
        return budget > 0 && uv_hrtime() &- budgetStart > budget
    }
}
