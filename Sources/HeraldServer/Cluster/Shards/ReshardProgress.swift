/// How far a reshard got: the hash `{p}reshard` on shard 0, written as the work goes and
/// deleted when it is done, so an interrupted run is resumed by the same command and a
/// different one is refused while it is there.
///
/// Fields: `old`, `new` (the lists as `ShardList.recorded`), `phase` (`move`, then
/// `check`), `channels` (how many the cluster held, counted before anything moved),
/// `moving` (how many of them had to move), `moved` (how many have), and per source server
/// `cursor:HOST:PORT`, the `SCAN` cursor its move pass has finished up to (`done` once it
/// went round).
struct ReshardProgress: Equatable, Sendable {
    /// Where the work is.
    enum Phase: String, Sendable {
        /// Channels are being moved, source server by source server.
        case move
        /// Everything moved: every server is checked and its counters written.
        case check
    }

    /// The cursor value of a source server whose move pass is complete.
    static let done = "done"

    /// OLD, as recorded.
    var old: String
    /// NEW, as recorded.
    var new: String
    /// The phase.
    var phase: Phase = .move
    /// Channels in the cluster before the reshard.
    var channels = 0
    /// How many of them were to move.
    var moving = 0
    /// How many have moved.
    var moved = 0
    /// Per source server (`HOST:PORT`): the `SCAN` cursor its move pass got to, or `done`.
    var cursors: [String: String] = [:]

    /// A fresh record.
    init(old: String, new: String, channels: Int, moving: Int) {
        self.old = old
        self.new = new
        self.channels = channels
        self.moving = moving
    }

    /// Reads `HGETALL {p}reshard`'s reply: nil for an empty one (no reshard under way).
    /// - Throws: `ReshardError.refused` when the hash is there but not one this tool
    ///   wrote (a field missing or malformed), naming the key.
    init?(hash reply: RedisReply, key: String) throws(ReshardError) {
        guard let items = reply.elements, !items.isEmpty else { return nil }
        var fields: [String: String] = [:]
        var at = 0
        while at + 1 < items.count {
            if let name = items[at].bytes, let value = items[at + 1].bytes {
                fields[String(decoding: name, as: UTF8.self)] = String(decoding: value, as: UTF8.self)
            }
            at += 2
        }
        guard let old = fields["old"], let new = fields["new"],
              let phase = fields["phase"].flatMap(Phase.init(rawValue:)),
              let channels = fields["channels"].flatMap({ Int($0) }), let moving = fields["moving"].flatMap({ Int($0) }),
              let moved = fields["moved"].flatMap({ Int($0) }) else {
            throw .refused("\(key) holds something other than a reshard's progress; look at it, and delete it if it is stale")
        }
        self.init(old: old, new: new, channels: channels, moving: moving)
        self.phase = phase
        self.moved = moved
        for (name, value) in fields where name.hasPrefix("cursor:") {
            cursors[String(name.dropFirst("cursor:".count))] = value
        }
    }

    /// The whole record as `HSET` arguments after the key (field, value, …).
    var fields: [[UInt8]] {
        var pairs: [(String, String)] = [("old", old), ("new", new), ("phase", phase.rawValue),
                                         ("channels", String(channels)), ("moving", String(moving)),
                                         ("moved", String(moved))]
        for (server, cursor) in cursors.sorted(by: { $0.key < $1.key }) { pairs.append(("cursor:" + server, cursor)) }
        return pairs.flatMap { [Array($0.0.utf8), Array($0.1.utf8)] }
    }

    /// The fields a finished page of the move pass changes: `moved` and the server's cursor.
    func pageFields(server: String) -> [[UInt8]] {
        [Array("moved".utf8), Array(String(moved).utf8),
         Array(("cursor:" + server).utf8), Array((cursors[server] ?? "0").utf8)]
    }
}
