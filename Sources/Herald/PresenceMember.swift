/// One member of a channel's presence: a connection holding a subscription on exactly that
/// channel (docs/protocol.md, "Presence"), with the user it signed in as and the `info` it gave
/// at `hello`.
///
/// `Info` is the app's own type for that `info` (say `struct Profile: Decodable { let name:
/// String }`); ``info`` is nil when the connection sent none or it did not decode as `Info`
/// (another app version, another kind of client), and ``rawInfo`` keeps the bytes either way.
public struct PresenceMember<Info: Decodable & Sendable>: Sendable, Identifiable {
    /// The connection's client id (`c7`): unique while the daemon runs, so it identifies the
    /// member. A reconnect makes a new one (see ``instance`` for the app instance behind it).
    public let client: String
    /// The user the connection authenticated as (with auth on), else nil.
    public let user: String?
    /// The connection's `hello` `info` decoded as `Info`; nil when absent or not an `Info`.
    public let info: Info?
    /// The connection's `hello` `info` as it travelled, nil when it sent none.
    public let rawInfo: RawJSON?
    /// The `instance` string in `info` (Herald clients send one: ``ClientConfiguration/instance``),
    /// naming the app instance across its reconnects; nil when `info` has none.
    public let instance: String?

    /// The member's identity in lists (``client``).
    public var id: String { client }

    /// Reads `{"client":C,"user":U?,"info":I?}` (a `presence` answer's member or a `$presence`
    /// event's data); nil when it is not an object with a string `client`.
    init?(_ raw: [UInt8]) {
        guard let fields = ServerFrame(raw), let client = fields.string("client") else { return nil }
        self.client = client
        user = fields.string("user")
        let info = fields.raw("info")
        rawInfo = info
        self.info = info.flatMap { try? $0.decode(as: Info.self) }
        instance = info.flatMap { ServerFrame($0.bytes)?.string("instance") }
    }

    /// Decodes the member's `info` as another type than `Info`.
    /// - Parameter type: the type its `info` was encoded from.
    /// - Returns: the decoded info, or nil when the member has none.
    /// - Throws: ``HeraldClientError/decoding(type:channel:message:)`` when it does not decode.
    public func info<Other: Decodable>(as type: Other.Type) throws(HeraldClientError) -> Other? {
        guard let rawInfo else { return nil }
        return try rawInfo.decode(as: Other.self)
    }

    /// The client id's number (`c7` → 7), the daemon's listing order; nil for another shape.
    var number: Int? { Self.number(of: client) }

    /// `cN` → N; nil for anything else.
    static func number(of client: String) -> Int? {
        guard client.hasPrefix("c") else { return nil }
        return Int(client.dropFirst())
    }
}

extension PresenceMember: Equatable where Info: Equatable {}

/// The `info` every Herald client puts in its `hello`: the instance id that lets a quick
/// reconnect keep its place (``ClientConfiguration/instance``). The default `Info` of
/// ``HeraldClient/presence(of:options:)``; an app that adds fields of its own
/// (``ClientConfiguration/info``) decodes them with a type of its own.
public struct ClientInfo: Decodable, Sendable, Hashable {
    /// The app instance (a UUID made per client object unless the app names it).
    public let instance: String?
}

/// A channel's presence at one moment: who is there and how many.
public struct PresenceState<Info: Decodable & Sendable>: Sendable {
    /// The members in the daemon's order (by client id); empty when ``isCountOnly``.
    public let members: [PresenceMember<Info>]
    /// How many members the channel has.
    public let count: Int
    /// True while the channel has more members than the mirror lists
    /// (``PresenceOptions/maxListed``): only ``count`` is kept.
    public let isCountOnly: Bool
}

/// One change a ``RemotePresence`` applied, as its ``RemotePresence/changes(buffering:)`` tells it.
public enum PresenceChange<Info: Decodable & Sendable>: Sendable {
    /// A connection became a member (its first subscription on the channel).
    case joined(PresenceMember<Info>)
    /// A connection stopped being a member (its last subscription ended, it disconnected, or
    /// its grace period ran out). The member as the mirror knew it.
    case left(PresenceMember<Info>)
    /// The daemon tells counts instead of each change (a large or busy channel), or the
    /// mirror lists counts only: the member count is now this.
    case count(Int)
    /// Cluster mode: one node's own count (`"node":NAME`; each node counts its own members,
    /// the total is the sum of every node's latest). Read by ``init(event:)``; a
    /// ``RemotePresence`` reads the total again instead of telling this.
    case nodeCount(node: String, count: Int)
    /// The member list was read again from the daemon (after a reconnect, a burst the daemon
    /// only counted, a change that did not fit): the whole state is now this.
    case resynced(PresenceState<Info>)
}

extension PresenceChange {
    /// Reads one `$presence.CH` event's data (`{"action":"join"|"leave","client":…}` or
    /// `{"action":"count","count":N}`), for apps and tools that subscribe to it themselves.
    /// - Parameter data: the event's data.
    /// - Returns: the change; nil when the data is not a presence event this client knows.
    public init?(event data: RawJSON) {
        guard let fields = ServerFrame(data.bytes) else { return nil }
        switch fields.string("action") {
        case "join":
            guard let member = PresenceMember<Info>(data.bytes) else { return nil }
            self = .joined(member)
        case "leave":
            guard let member = PresenceMember<Info>(data.bytes) else { return nil }
            self = .left(member)
        case "count":
            guard let count = fields.int("count") else { return nil }
            if let node = fields.string("node") {
                self = .nodeCount(node: node, count: count)
            } else {
                self = .count(count)
            }
        default:
            return nil
        }
    }
}

/// How a ``RemotePresence`` reads a channel's members.
public struct PresenceOptions: Sendable, Equatable {
    /// Members asked per `presence` page (1 … 1000).
    public var pageSize: Int
    /// Past this many members the mirror keeps only the count (`count_only`), as the daemon's
    /// own watchers get counts past `presence_max_members` (default 1000 too).
    public var maxListed: Int

    /// Creates options.
    /// - Parameters:
    ///   - pageSize: members per `presence` page (default 100, the daemon's default).
    ///   - maxListed: the most members listed before keeping only the count (default 1000).
    public init(pageSize: Int = 100, maxListed: Int = 1000) {
        self.pageSize = min(1000, max(1, pageSize))
        self.maxListed = max(0, maxListed)
    }
}

/// One page of a channel's members, as the `presence` op answers it.
public struct PresencePage: Sendable {
    /// How many members the channel has (all pages).
    public let count: Int
    /// This page's members (none with `countOnly`).
    public let members: [PresenceMember<ClientInfo>]
    /// Where the next page starts (pass it as `after`); nil on the last page.
    public let next: String?
}
