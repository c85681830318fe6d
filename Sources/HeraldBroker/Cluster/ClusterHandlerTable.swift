import HeraldWire

/// One signal handler subscription of the cluster (docs/cluster.md, "Signals and links"):
/// its connection (a global client id, so its node is `ClusterOwner.node(of:)`), its name, its
/// pattern, and its score, the cluster-wide registration order Redis gave it
/// (`INCR {p}hseq`), which is the order handlers of one level are offered a signal in.
public struct ClusterHandler: Equatable, Sendable {
    /// The handler's connection, a global client id.
    public let owner: ConnectionID
    /// The subscription's name within that connection.
    public let name: [UInt8]
    /// The pattern it handles.
    public let pattern: [UInt8]
    /// The cluster-wide registration order.
    public let score: Int

    /// A handler entry.
    public init(owner: ConnectionID, name: [UInt8], pattern: [UInt8], score: Int) {
        self.owner = owner
        self.name = name
        self.pattern = pattern
        self.score = score
    }

    /// The node its connection is on.
    var node: Int { ClusterOwner.node(of: owner) }

    /// `cOWNER/NAME`, as `handled_by` and `timeouts` name it.
    var globalID: [UInt8] {
        var id: [UInt8] = [UInt8(ascii: "c")]
        id.appendInt(owner)
        id.append(UInt8(ascii: "/"))
        return id + name
    }
}

/// Every signal handler of the cluster, this node's included, mirrored on every node from
/// the announcements on the interest channel (and a snapshot at ready), so the sender's
/// node resolves each level's handlers locally, in score order, as one node does with its
/// subscription order.
///
/// Costs: a level's lookup walks the pattern trie (what matches, not every handler); a
/// connection's handlers are one dictionary (its teardown costs its handlers); a node's
/// departure costs the owners of that node.
final class ClusterHandlerTable {
    private struct Key: Hashable {
        let owner: ConnectionID
        let name: [UInt8]
    }

    /// The handlers of one pattern, a class so adding one mutates in place (a dictionary
    /// value in the trie would be copied whole on every add).
    private final class Entries {
        var handlers: [Key: ClusterHandler] = [:]
    }

    private var byOwner: [ConnectionID: [[UInt8]: ClusterHandler]] = [:]
    private let trie = PatternTrie<Entries>()
    /// How many handlers the table holds.
    private(set) var count = 0

    /// Adds or replaces a handler (same owner and name).
    func add(_ handler: ClusterHandler) {
        remove(owner: handler.owner, name: handler.name)
        byOwner[handler.owner, default: [:]][handler.name] = handler
        let entries: Entries
        if let known = trie.value(at: handler.pattern) {
            entries = known
        } else {
            entries = Entries()
            trie.insert(entries, at: handler.pattern)
        }
        entries.handlers[Key(owner: handler.owner, name: handler.name)] = handler
        count += 1
    }

    /// Removes one handler, when the table has it.
    func remove(owner: ConnectionID, name: [UInt8]) {
        guard let handler = byOwner[owner]?.removeValue(forKey: name) else { return }
        if byOwner[owner]?.isEmpty == true { byOwner[owner] = nil }
        dropFromTrie(handler)
    }

    /// Removes every handler of one connection. - Returns: how many went.
    @discardableResult
    func removeAll(ownedBy owner: ConnectionID) -> Int {
        guard let handlers = byOwner.removeValue(forKey: owner) else { return 0 }
        for handler in handlers.values { dropFromTrie(handler) }
        return handlers.count
    }

    /// The owners with handlers, for a node's departure or a snapshot.
    var owners: [ConnectionID] { Array(byOwner.keys) }

    /// One owner's handlers.
    func handlers(ownedBy owner: ConnectionID) -> [ClusterHandler] {
        byOwner[owner].map { Array($0.values) } ?? []
    }

    /// One handler, when the table has it.
    func handler(owner: ConnectionID, name: [UInt8]) -> ClusterHandler? {
        byOwner[owner]?[name]
    }

    /// The handlers whose pattern matches the concrete `level`, in score order.
    func matching(_ level: [UInt8]) -> [ClusterHandler] {
        var found: [ClusterHandler] = []
        trie.forEachMatch(of: level) { pattern, entries in
            guard ChannelName.matches(pattern: pattern, channel: level) else { return }
            found.append(contentsOf: entries.handlers.values)
        }
        return found.sorted { $0.score < $1.score }
    }

    private func dropFromTrie(_ handler: ClusterHandler) {
        count -= 1
        guard let entries = trie.value(at: handler.pattern) else { return }
        entries.handlers[Key(owner: handler.owner, name: handler.name)] = nil
        if entries.handlers.isEmpty { trie.removeValue(at: handler.pattern) }
    }
}
