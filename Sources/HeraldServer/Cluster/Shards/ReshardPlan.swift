/// What `heraldd --reshard OLD NEW` is to do, worked out before Redis is asked anything:
/// which servers take part, which server each channel belongs on under NEW, and the names
/// of the keys involved. Pure, so its rules are tested without Redis.
///
/// Servers, not list positions, are what counts: a channel moves when the server that holds
/// it is not the server NEW places it on (`home`). Growing `[A, B]` to `[A, B, C]` thus
/// moves only the channels jump hash sends to C (about a third), and a channel already
/// where it belongs is never touched, whatever list position its server had before.
///
/// Shard 0 must be the same server in both lists: it holds the cluster's own records
/// (nodes, interest, locks, links, instance owners, leases, the epoch and `node_index`),
/// which this tool does not move, and the `{p}reshard` and `{p}shards` records.
struct ReshardPlan: Sendable {
    /// The list the cluster ran with.
    let old: ShardList
    /// The list it is to run with.
    let new: ShardList
    /// `cluster.key_prefix`.
    let prefix: String
    /// Every server either list names: OLD's in order, then those only NEW names. Each
    /// with the credentials of the first URL that gives any for it. Index 0 is shard 0.
    let servers: [ShardList.Shard]
    /// How many of `servers` are OLD's (the first ones): where channels are moved from.
    let sourceCount: Int

    /// Works out the plan.
    /// - Throws: `ReshardError.refused` when shard 0 differs between the lists, or when
    ///   they are the same list.
    init(old: ShardList, new: ShardList, prefix: String) throws(ReshardError) {
        guard let oldFirst = old.shards.first, let newFirst = new.shards.first else {
            throw .refused("a shard list needs at least one shard")
        }
        guard oldFirst.address == newFirst.address else {
            throw .refused("the first shard must stay the same server (OLD starts with \(oldFirst.address), NEW with "
                + "\(newFirst.address)): it holds the cluster's own records (nodes, interest, locks, links, the epoch), "
                + "which --reshard does not move; move that Redis by replication (REPLICAOF, then promote it) instead")
        }
        guard old.recorded != new.recorded else {
            throw .refused("OLD and NEW are the same list (\(old.recorded)): nothing to move")
        }
        self.old = old
        self.new = new
        self.prefix = prefix
        var servers: [ShardList.Shard] = []
        for shard in old.shards + new.shards {
            if let at = servers.firstIndex(where: { $0.address == shard.address }) {
                if servers[at].credentials == nil, shard.credentials != nil { servers[at] = shard }
            } else {
                servers.append(shard)
            }
        }
        self.servers = servers
        sourceCount = old.count
    }

    /// The index in `servers` of the server NEW places `channel` on.
    func home(of channel: some Sequence<UInt8>) -> Int {
        let address = new.home(of: channel)
        return servers.firstIndex { $0.address == address } ?? 0
    }

    /// Whether `server` is one only NEW names (it must hold no channel of the cluster at the start).
    func isNewOnly(_ server: Int) -> Bool {
        server >= sourceCount
    }

    /// `prefix` + `stem`, as a key.
    func key(_ stem: String) -> [UInt8] {
        Array((prefix + stem).utf8)
    }

    /// `prefix` + `stem` + the channel's bytes (`m:`, `h:`, `l:` keys).
    func key(_ stem: String, _ channel: [UInt8]) -> [UInt8] {
        key(stem) + channel
    }

    /// What `{p}shards` holds while a reshard is under way: equal to no list a node can be
    /// configured with, so a node started meanwhile refuses, naming it.
    var marker: String {
        "resharding from " + old.recorded + " to " + new.recorded
    }

    /// The `SCAN MATCH` pattern of every key whose name starts with `prefix` + `stem`: the
    /// prefix's glob characters (`*?[]\`) escaped, then `*`.
    func match(_ stem: String) -> [UInt8] {
        var pattern: [UInt8] = []
        for byte in (prefix + stem).utf8 {
            if byte == UInt8(ascii: "*") || byte == UInt8(ascii: "?") || byte == UInt8(ascii: "[")
                || byte == UInt8(ascii: "]") || byte == UInt8(ascii: "\\") {
                pattern.append(UInt8(ascii: "\\"))
            }
            pattern.append(byte)
        }
        return pattern + [UInt8(ascii: "*")]
    }
}
