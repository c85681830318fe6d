/// Declared channels and links that end with an object (docs/client.md, "Objects own things").
///
/// Why: an instance channel or a link usually stands for an object of the app (a view model,
/// an open document, a pushed screen). With an `owner` the client removes the channel or the
/// link when the owner is released (within a second, as for the weak-owner subscription), so
/// the object needs no `Task {}` in `deinit`; and its `deinit` can also end them at once with
/// the synchronous ``scheduleRemoval(of:)`` and ``scheduleUnlink(of:)``.
extension HeraldClient {
    /// Declares an instance channel for as long as `owner` lives (``declare(_:)``): when the
    /// owner is released, the client removes the channel (its subscribers get `removed`).
    ///
    /// The owner is held weakly and never touched, so any class may own (it need not be
    /// `Sendable`). It runs on the caller's actor, so a main-actor view model passes `self`.
    /// - Parameters:
    ///   - channel: a concrete channel.
    ///   - owner: the object whose lifetime bounds the channel.
    ///   - onError: where a restore of it after a reconnect that failed for good is reported
    ///     (``HeraldClientError/restoreFailed(kind:channel:cause:)``); nil: the error handler.
    /// - Throws: the daemon's `conflict`, `forbidden`, `.badChannel`, `.notConnected`, ….
    nonisolated(nonsending) public func declare(_ channel: Channel, owner: AnyObject,
                                                onError: (@Sendable (HeraldClientError) -> Void)? = nil) async throws(HeraldClientError) {
        let name = try channel.validatedConcrete().name
        let weak = WeakOwner(owner)
        try await declare(channel)
        state.withLock { state in
            state.channelOwners[name] = weak
            state.ownerErrorHandlers[.instanceChannel(name)] = onError
        }
    }

    /// Links `channel` to `parent` for as long as `owner` lives (``link(_:to:)``): when the
    /// owner is released, the client unlinks it.
    /// - Parameters:
    ///   - channel: a concrete channel.
    ///   - parent: a concrete channel, the level signals go on to.
    ///   - owner: the object whose lifetime bounds the link (held weakly, never touched).
    ///   - onError: where a restore that failed for good is reported; nil: the error handler.
    /// - Throws: the daemon's `cycle`, `conflict`, `forbidden`, `.badChannel`, `.notConnected`, ….
    nonisolated(nonsending) public func link(_ channel: Channel, to parent: Channel, owner: AnyObject,
                                             onError: (@Sendable (HeraldClientError) -> Void)? = nil) async throws(HeraldClientError) {
        let name = try channel.validatedConcrete().name
        let parentName = try parent.validatedConcrete().name
        let weak = WeakOwner(owner)
        try await link(channel, to: parent)
        state.withLock { state in
            state.linkOwners[name] = weak
            state.ownerErrorHandlers[.link(LinkRecord(channel: name, parent: parentName))] = onError
        }
    }

    /// Removes an owned instance channel without waiting: synchronous, safe in `deinit`.
    ///
    /// The client forgets it at once (no restore after a reconnect) and sends `remove` when
    /// connected (while disconnected the daemon has dropped it already). A channel this client
    /// did not declare is left alone. A refusal goes to the error handler.
    /// - Parameter channel: the channel.
    public func scheduleRemoval(of channel: Channel) {
        guard let name = try? channel.validatedConcrete().name else { return }
        let wake = state.withLock { state -> Bool in
            forgetDeclared(name, in: &state) && state.linkUp && state.enqueue(Self.ownedLine("remove", name))
        }
        if wake { loop.wake() }
    }

    /// Removes this client's link of `channel` without waiting: synchronous, safe in `deinit`
    /// (as ``scheduleRemoval(of:)`` for a link).
    /// - Parameter channel: the linked channel.
    public func scheduleUnlink(of channel: Channel) {
        guard let name = try? channel.validatedConcrete().name else { return }
        let wake = state.withLock { state -> Bool in
            forgetLink(name, in: &state) && state.linkUp && state.enqueue(Self.ownedLine("unlink", name))
        }
        if wake { loop.wake() }
    }

    /// Removes the channels and links whose owner is gone (the once-a-second sweep).
    func sweepDeadObjectOwners() {
        let wake = state.withLock { state -> Bool in
            guard !state.channelOwners.isEmpty || !state.linkOwners.isEmpty else { return false }
            var wake = false
            for (name, owner) in state.channelOwners where !owner.isAlive {
                if forgetDeclared(name, in: &state), state.linkUp { wake = state.enqueue(Self.ownedLine("remove", name)) || wake }
            }
            for (name, owner) in state.linkOwners where !owner.isAlive {
                if forgetLink(name, in: &state), state.linkUp { wake = state.enqueue(Self.ownedLine("unlink", name)) || wake }
            }
            return wake
        }
        if wake { loop.wake() }
    }

    /// Forgets a declared channel, its owner and its handler.
    /// - Returns: whether this client had declared it.
    private func forgetDeclared(_ name: String, in state: inout ClientState) -> Bool {
        state.channelOwners[name] = nil
        state.ownerErrorHandlers[.instanceChannel(name)] = nil
        guard state.declared.contains(name) else { return false }
        state.declared.removeAll { $0 == name }
        return true
    }

    /// Forgets a link, its owner and its handler.
    /// - Returns: whether this client had linked the channel.
    private func forgetLink(_ name: String, in state: inout ClientState) -> Bool {
        state.linkOwners[name] = nil
        let removed = state.links.filter { $0.channel == name }
        for link in removed { state.ownerErrorHandlers[.link(link)] = nil }
        state.links.removeAll { $0.channel == name }
        return !removed.isEmpty
    }

    /// A fire-and-forget frame about one channel (`remove`, `unlink`).
    private static func ownedLine(_ op: String, _ name: String) -> [UInt8] {
        var writer = FrameWriter(op: op)
        writer.string("ch", name)
        return writer.finished()
    }
}
