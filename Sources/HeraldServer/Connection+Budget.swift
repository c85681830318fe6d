import CLibUV

/// How long one connection's lines may run in one loop pass before the others get theirs.
///
/// Why: libuv hands a readable connection up to 32 reads of 64 KiB in a row, and every line
/// of each was handled at once, so one client pipelining cheap but numerous ops (400,000
/// `declare`s, a million `lock`s over ten connections) held the loop for everyone for as long
/// as its flood took (issue 12). Past its share of `pass_budget_us` (default 1 ms, shared by
/// the connections that spent theirs in the pass before, see `Worker.connectionBudgetNs`;
/// 0 turns it off) a connection stops reading and holds the rest of its read (at most one
/// read buffer); the worker hands it another budget in the next pass (`Worker.yielded`),
/// after every other connection's reads of that pass.
///
/// The clock is read every `budgetStride` lines: 16 while lines are cheap (a steady
/// publisher pays about 2 ns per line; a 64 KiB read of small publishes takes well under
/// the budget and is never split), and every line once a stride cost more than a quarter
/// of the budget, since one line can cost milliseconds (a table growing) and 32 such lines
/// between two looks at the clock held the loop 100 ms.
extension Connection {
    /// Most lines between two looks at the clock.
    static let maxBudgetStride = 16

    /// Called after each line by the framer: whether this pass's budget is spent.
    func hasSpentBudget() -> Bool {
        let pass = worker.pass
        if budgetPass != pass {
            budgetPass = pass
            budgetStart = uv_hrtime()
            budgetLastLook = budgetStart
            budgetLines = 0
            return false
        }
        budgetLines &+= 1
        guard budgetLines >= budgetStride else { return false }
        budgetLines = 0
        let budget = worker.connectionBudgetNs
        guard budget > 0 else { return false }
        let now = uv_hrtime()
        let stride = now &- budgetLastLook
        budgetLastLook = now
        budgetStride = stride > budget / 4 ? 1 : Swift.min(budgetStride * 2, Connection.maxBudgetStride)
        return now &- budgetStart > budget
    }
}
