/// One link this client holds: signals bubbling from `channel` go on at `parent`.
public struct ChannelLink: Sendable, Equatable {
    /// The channel whose next level is overridden.
    public let channel: Channel
    /// The level a signal goes on to after `channel`.
    public let parent: Channel

    /// Creates a link description.
    /// - Parameters:
    ///   - channel: the linked channel.
    ///   - parent: its next level for signals.
    public init(channel: Channel, parent: Channel) {
        self.channel = channel
        self.parent = parent
    }
}

/// Links (docs/protocol.md "Signals (responder chain)", `link`/`unlink`).
///
/// A link belongs to the connection that made it, so the daemon drops it when the connection
/// goes away; the client links again after every reconnect (right after its instance
/// channels, before anything else), because the app's responder chain (a pushed screen whose
/// next responder is the screen below) still stands. A `conflict` then is retried for up to
/// `configuration.restoreRetryTimeout` (after a failover the client's own previous connection
/// holds the link until the cluster declares its node down), the link still listed in
/// ``links`` meanwhile. A conflict that outlasts that (another connection linked the channel),
/// or a link that would now loop (`cycle`), is forgotten and reported as
/// ``HeraldClientError/restoreFailed(kind:channel:cause:)``.
extension HeraldClient {
    /// Makes `parent` the next level of `channel` for signals (instead of `channel` minus its
    /// last segment). Linking a channel this client linked before moves its link.
    /// - Parameters:
    ///   - channel: a concrete channel.
    ///   - parent: a concrete channel, the level signals go on to.
    /// - Throws: the daemon's `cycle` (the route would loop), `conflict` (another connection
    ///   linked `channel`), `forbidden`, `.badChannel`, `.notConnected`, ….
    public func link(_ channel: Channel, to parent: Channel) async throws(HeraldClientError) {
        let name = try channel.validatedConcrete().name
        let parentName = try parent.validatedConcrete().name
        _ = try await ask("link") { writer in
            writer.string("ch", name)
            writer.string("parent", parentName)
        }
        state.withLock { state in
            state.links.removeAll { $0.channel == name }
            state.links.append(LinkRecord(channel: name, parent: parentName))
        }
    }

    /// Removes this client's link of `channel`: signals go on at its name's parent again.
    /// - Parameter channel: the linked channel.
    /// - Throws: the daemon's `not_found` (no link), `forbidden` (another connection's link),
    ///   `.badChannel`, `.notConnected`, ….
    public func unlink(_ channel: Channel) async throws(HeraldClientError) {
        let name = try channel.validatedConcrete().name
        // Forgotten first: if the link drops now, the daemon removes it anyway.
        state.withLock { state in
            state.links.removeAll { $0.channel == name }
            state.linkOwners[name] = nil
        }
        _ = try await ask("unlink") { writer in writer.string("ch", name) }
    }

    /// The links this client holds (and makes again after a reconnect), in the order made; a
    /// link whose restore is being retried is listed until it is given up.
    public var links: [ChannelLink] {
        state.withLock { state in
            state.links.map { ChannelLink(channel: Channel(verbatim: $0.channel), parent: Channel(verbatim: $0.parent)) }
        }
    }
}

/// A link as the client remembers it, to restore it.
struct LinkRecord: Hashable, Sendable {
    let channel: String
    let parent: String
}
