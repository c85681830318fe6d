/// Instance channels (docs/protocol.md "Instance channels").
///
/// Declared channels are declared again after a reconnect. Why: the daemon removes a
/// connection's instance channels when it goes away (subscribers get `removed`), but the app
/// still owns the thing the channel stands for (the car, the open document); declaring again
/// lets new subscribers find an owned channel. Subscribers that were dropped by the removal
/// subscribe again themselves. A `conflict` then is retried for up to
/// `configuration.restoreRetryTimeout`: after a failover the client's own previous connection
/// owns the channel until the cluster declares its node down. The channel stays listed in
/// ``declaredChannels`` meanwhile; a conflict that outlasts the bound (another connection
/// declared it) forgets the channel and is reported as
/// ``HeraldClientError/restoreFailed(kind:channel:cause:)``.
extension HeraldClient {
    /// Makes this connection the owner of an instance channel. When this client removes it,
    /// closes, or loses the connection, the daemon drops every subscription on exactly this
    /// channel and tells their holders (``SubscriptionEnd/removed(channel:)``).
    ///
    /// Declaring a channel this client already owns is fine (it stays owned once).
    /// - Parameter channel: a concrete channel.
    /// - Throws: the daemon's `conflict` (another connection owns it), `forbidden` (`$…`),
    ///   `.badChannel`, `.notConnected`, ….
    public func declare(_ channel: Channel) async throws(HeraldClientError) {
        let name = try channel.validatedConcrete().name
        _ = try await ask("declare") { writer in writer.string("ch", name) }
        state.withLock { state in
            if !state.declared.contains(name) { state.declared.append(name) }
        }
    }

    /// Removes an owned instance channel: its exact subscribers get `removed`.
    /// - Parameter channel: the channel.
    /// - Throws: the daemon's `not_found` (nobody declared it), `forbidden` (another
    ///   connection owns it), `.notConnected`, ….
    public func remove(_ channel: Channel) async throws(HeraldClientError) {
        let name = try channel.validatedConcrete().name
        // Forgotten first: if the link drops now, the daemon removes it anyway.
        state.withLock { state in
            state.declared.removeAll { $0 == name }
            state.channelOwners[name] = nil
            state.ownerErrorHandlers[.instanceChannel(name)] = nil
        }
        _ = try await ask("remove") { writer in writer.string("ch", name) }
    }

    /// Removes every instance channel this connection owns.
    /// - Returns: how many were removed.
    /// - Throws: `.notConnected`, ….
    @discardableResult
    public func removeAllInstanceChannels() async throws(HeraldClientError) -> Int {
        state.withLock { state in
            state.declared = []
            state.channelOwners = [:]
        }
        let frame = try await ask("remove") { writer in writer.bool("all", true) }
        return frame.int("count") ?? 0
    }

    /// The instance channels this client owns (and declares again after a reconnect); one whose
    /// restore is being retried is listed until it is given up.
    public var declaredChannels: [Channel] {
        state.withLock { state in state.declared.map { Channel(verbatim: $0) } }
    }
}
