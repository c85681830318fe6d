/// Withdrawing a cancelled `req` or `signal` on the daemon (docs/protocol.md, "Cancelling a
/// request or a signal"): the client sends `{"op":"cancel","of":RID,"rid":R}` so the daemon
/// drops the request's waiter and deadline, or stops the signal's route, at once.
///
/// Why the cancel carries its own `rid`: its answer is the point after which nothing more can
/// arrive for the withdrawn operation (the daemon answers in order, and after the cancel it
/// sends nothing for it), so that is when the client forgets what it kept to drop late
/// answers quietly. A link that drops first ends that wait too (everything pending fails).
extension HeraldClient {
    /// Queues `cancel {of: rid}` when the link `rid` went out on is still up.
    ///
    /// Call under the state lock, with `rid` still registered (so the link is the one it was
    /// sent on: losing a link fails every pending answer under the same lock).
    /// - Parameters:
    ///   - rid: the `rid` of the `req` or `signal` to withdraw.
    ///   - state: the locked client state.
    ///   - settled: runs, outside the lock, once the daemon answered the cancel or the link
    ///     dropped: nothing more for `rid` will come.
    /// - Returns: whether the I/O thread must be woken to send it.
    func queueWithdrawal(of rid: Int, in state: inout ClientState, settled: @escaping @Sendable () -> Void) -> Bool {
        guard state.linkUp, !state.closed else { return false }
        let cancelRid = state.register(timeout: configuration.requestTimeout) { _ in settled() }
        var writer = FrameWriter(op: "cancel", rid: cancelRid)
        writer.int("of", rid)
        return state.enqueue(writer.finished())
    }

    /// A withdrawn request is settled: its answer will not come (or came already), so its
    /// `rid` need not be remembered as one to drop quietly.
    func forgetAbandoned(rid: Int) {
        state.withLock { _ = $0.abandoned.remove(rid) }
    }
}
