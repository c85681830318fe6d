/// Locks and instance channels (PROTOCOL.md "Locking", "Instance channels").
///
/// UNTESTED against a daemon that implements them: today's heraldd answers `unknown_op`.
/// Locks this client holds are re-taken after a reconnect (the daemon drops a connection's
/// locks when it closes).
extension HeraldClient {
    /// Suppresses deliveries of events on `channel` (a name or pattern), to every subscription
    /// or only to `subscriptions` (global ids `CLIENT/NAME`).
    /// - Parameters:
    ///   - channel: the channel or pattern.
    ///   - subscriptions: global ids, or nil for all.
    /// - Returns: the global ids the daemon locked.
    /// - Throws: the daemon's error (`unknown_op` today), `.notConnected`, ….
    @discardableResult
    public func lock(_ channel: Channel, subscriptions: [String]? = nil) async throws(HeraldClientError) -> [String] {
        _ = try channel.validatedPattern()
        return try await takeLock(LockRecord(channel: channel.name, subs: subscriptions, sub: nil))
    }

    /// Suppresses every delivery to one of this connection's subscriptions.
    /// - Parameter name: the subscription's name.
    /// - Throws: the daemon's error, `.notConnected`, ….
    public func lock(subscription name: String) async throws(HeraldClientError) {
        _ = try await takeLock(LockRecord(channel: nil, subs: nil, sub: name))
    }

    /// Releases a lock taken with the same arguments.
    /// - Parameters:
    ///   - channel: the channel or pattern.
    ///   - subscriptions: the same global ids as when locking.
    /// - Throws: the daemon's error, `.notConnected`, ….
    public func unlock(_ channel: Channel, subscriptions: [String]? = nil) async throws(HeraldClientError) {
        try await releaseLock(LockRecord(channel: channel.name, subs: subscriptions, sub: nil))
    }

    /// Releases the lock on one of this connection's subscriptions.
    /// - Parameter name: the subscription's name.
    /// - Throws: the daemon's error, `.notConnected`, ….
    public func unlock(subscription name: String) async throws(HeraldClientError) {
        try await releaseLock(LockRecord(channel: nil, subs: nil, sub: name))
    }

    private func takeLock(_ lock: LockRecord) async throws(HeraldClientError) -> [String] {
        let frame = try await ask("lock") { writer in
            writer.string("ch", lock.channel)
            writer.strings("subs", lock.subs)
            writer.string("sub", lock.sub)
        }
        state.withLock { state in
            if !state.locks.contains(lock) { state.locks.append(lock) }
        }
        return (try? (frame.raw("subs") ?? RawJSON("[]")).decode(as: [String].self)) ?? []
    }

    private func releaseLock(_ lock: LockRecord) async throws(HeraldClientError) {
        state.withLock { state in state.locks.removeAll { $0 == lock } }
        _ = try await ask("unlock") { writer in
            writer.string("ch", lock.channel)
            writer.strings("subs", lock.subs)
            writer.string("sub", lock.sub)
        }
    }

    /// Makes this connection the owner of an instance channel; it is removed (and its
    /// subscribers told) when this connection removes it or goes away.
    /// - Parameter channel: a concrete channel.
    /// - Throws: `conflict` when another connection owns it, `unknown_op` today, ….
    public func declare(_ channel: Channel) async throws(HeraldClientError) {
        let name = try channel.validatedConcrete().name
        _ = try await ask("declare") { writer in writer.string("ch", name) }
    }

    /// Removes an owned instance channel.
    /// - Parameter channel: the channel.
    /// - Throws: the daemon's error, `.notConnected`, ….
    public func remove(_ channel: Channel) async throws(HeraldClientError) {
        let name = try channel.validatedConcrete().name
        _ = try await ask("remove") { writer in writer.string("ch", name) }
    }
}
