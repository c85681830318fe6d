/// Which subscriptions an event on one channel would reach, split by whether a lock
/// (anyone's) suppresses that delivery now (the daemon's `locks` answer).
public struct LockStatus: Sendable, Equatable {
    /// The channel asked about.
    public let channel: String
    /// Global ids (`c7/menu`) whose deliveries on `channel` are suppressed.
    public let locked: [String]
    /// Global ids that would receive an event on `channel`.
    public let unlocked: [String]
}

/// Locks (docs/protocol.md "Locking").
///
/// Locks this client holds are re-taken after a reconnect (the daemon drops a connection's
/// locks when it closes): channel locks first, then each subscription's name lock right after
/// the subscription is restored. Global ids of this client's own subscriptions are rewritten
/// to the new client id. A re-take refused `unavailable` is retried for up to
/// `configuration.restoreRetryTimeout`; a final refusal forgets the lock and is reported as
/// ``HeraldClientError/restoreFailed(kind:channel:cause:)``.
extension HeraldClient {
    /// Suppresses deliveries of events on `channel` (a name or pattern), to every subscription
    /// or only to `subscriptions` (global ids `CLIENT/NAME`). The lock names channels, so it
    /// also covers subscriptions made while it holds.
    /// - Parameters:
    ///   - channel: the channel or pattern.
    ///   - subscriptions: global ids, or nil for all.
    /// - Returns: the global ids the lock silences now.
    /// - Throws: `.badChannel`, the daemon's `forbidden` (`$…` channels), `.notConnected`, ….
    @discardableResult
    public func lock(_ channel: Channel, subscriptions: [String]? = nil) async throws(HeraldClientError) -> [String] {
        _ = try channel.validatedPattern()
        let client = state.withLock { $0.info?.client }
        return try await takeLock(LockRecord(channel: channel.name, subscriptions: subscriptions, client: client))
    }

    /// Suppresses every delivery to one of this connection's subscriptions, on every channel.
    ///
    /// The lock survives the subscription being replaced under the same name.
    /// - Parameter name: the subscription's name (`Subscription.name`).
    /// - Returns: the global id locked.
    /// - Throws: the daemon's `not_found` (no such subscription), `.notConnected`, ….
    @discardableResult
    public func lock(subscription name: String) async throws(HeraldClientError) -> [String] {
        try await takeLock(LockRecord(subscription: name))
    }

    /// Releases a lock taken with the same arguments.
    /// - Parameters:
    ///   - channel: the channel or pattern.
    ///   - subscriptions: the same global ids as when locking.
    /// - Returns: how many of this client's locks were released (0: it held none such).
    /// - Throws: the daemon's error, `.notConnected`, ….
    @discardableResult
    public func unlock(_ channel: Channel, subscriptions: [String]? = nil) async throws(HeraldClientError) -> Int {
        let client = state.withLock { $0.info?.client }
        return try await releaseLock(LockRecord(channel: channel.name, subscriptions: subscriptions, client: client))
    }

    /// Releases the lock on one of this connection's subscriptions.
    /// - Parameter name: the subscription's name.
    /// - Returns: how many locks were released (0 or 1).
    /// - Throws: the daemon's error, `.notConnected`, ….
    @discardableResult
    public func unlock(subscription name: String) async throws(HeraldClientError) -> Int {
        try await releaseLock(LockRecord(subscription: name))
    }

    /// Asks which subscriptions an event on `channel` would reach, locked or not.
    /// - Parameter channel: a concrete channel.
    /// - Returns: the locked and unlocked global ids.
    /// - Throws: `.badChannel`, `.malformedFrame`, `.notConnected`, ….
    public func locks(on channel: Channel) async throws(HeraldClientError) -> LockStatus {
        let name = try channel.validatedConcrete().name
        let frame = try await ask("locks") { writer in writer.string("ch", name) }
        return LockStatus(channel: frame.string("ch") ?? name,
                          locked: try Self.stringList(frame, "locked"), unlocked: try Self.stringList(frame, "unlocked"))
    }

    private func takeLock(_ lock: LockRecord) async throws(HeraldClientError) -> [String] {
        let frame = try await ask("lock") { writer in
            // The id is read under the same lock that enqueues, so it is this connection's.
            writer.string("ch", lock.channel)
            writer.string("sub", lock.sub)
        } extra: { state, writer in
            writer.strings("subs", lock.subIDs(client: state.info?.client ?? ""))
        }
        state.withLock { state in
            if !state.locks.contains(lock) { state.locks.append(lock) }
        }
        return try Self.stringList(frame, "subs")
    }

    private func releaseLock(_ lock: LockRecord) async throws(HeraldClientError) -> Int {
        // Forgotten first: if the link drops now, the daemon releases it anyway.
        state.withLock { state in state.locks.removeAll { $0 == lock } }
        let frame = try await ask("unlock") { writer in
            writer.string("ch", lock.channel)
            writer.string("sub", lock.sub)
        } extra: { state, writer in
            writer.strings("subs", lock.subIDs(client: state.info?.client ?? ""))
        }
        return frame.int("released") ?? 0
    }

    /// A `[String]` field of an answer; absent is empty, anything else is a malformed frame.
    static func stringList(_ frame: ServerFrame, _ key: String) throws(HeraldClientError) -> [String] {
        guard let raw = frame.raw(key) else { return [] }
        do {
            return try raw.decode(as: [String].self)
        } catch {
            throw .malformedFrame("\(key) is not a list of strings: \(String(decoding: raw.bytes.prefix(120), as: UTF8.self))")
        }
    }

    /// A lock frame for the current connection (restore), with `rid`.
    func lockLine(_ lock: LockRecord, rid: Int, client: String) -> [UInt8] {
        var writer = FrameWriter(op: "lock", rid: rid)
        writer.string("ch", lock.channel)
        writer.strings("subs", lock.subIDs(client: client))
        writer.string("sub", lock.sub)
        return writer.finished()
    }
}
