/// What one `sub` frame asked, for handling its answer.
struct SubscribeAttempt: Sendable {
    /// The `since` sent, nil for none.
    let since: Int?
    /// Sent to restore the subscription on a new connection (a refusal that may pass is
    /// retried, a final one is reported as `.restoreFailed`).
    let restoring: Bool
    /// The restore retry this is, nil for a first attempt.
    let retry: RestoreRetry?
    /// The connection it went out on (`ClientState.generation`).
    let generation: Int
}
