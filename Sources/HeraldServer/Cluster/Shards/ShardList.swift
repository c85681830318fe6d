/// A cluster's shard list as the operator writes it: `redis://` URLs, shard 0 first
/// (issue 33; docs/architecture.md, "Several Redis primaries").
///
/// What `{p}shards` on shard 0 records is `recorded`: the URLs without their credentials,
/// port always written, joined by `,`, so two spellings of the same list (a trailing `/`, a
/// default port left out, other passwords) record the same and a password never lands in
/// Redis. A shard *is* its server: two entries naming the same `host:port` are refused,
/// since with one key prefix they would be one data set.
struct ShardList: Equatable, Sendable {
    /// One shard: where its Redis is and what it wants as `AUTH`.
    struct Shard: Equatable, Sendable {
        /// The server (what identifies the shard).
        let address: RedisAddress
        /// From the URL's `user:password@`, if any.
        let credentials: RedisCredentials?

        /// `redis://host:port`: the URL without its credentials.
        var url: String { "redis://" + address.description }
    }

    /// The shards in order: a channel's shard is its index here (`ShardMap`).
    let shards: [Shard]

    /// Reads a comma-separated list of `redis://[user:password@]host:port` URLs, each as
    /// `cluster.redis` is read (`ClusterSettings.parse`).
    /// - Parameter text: the list as given on the command line.
    /// - Throws: `ClusterURLError` naming the entry at fault (credentials cut out): a bad URL,
    ///   an empty list or entry, or a server named twice.
    init(parsing text: String) throws(ClusterURLError) {
        let entries = text.split(separator: ",", omittingEmptySubsequences: false)
            .map(Self.trimmed)
        guard !entries.allSatisfy(\.isEmpty) else { throw ClusterURLError("no shard in \"\(text)\"") }
        var shards: [Shard] = []
        for entry in entries {
            guard !entry.isEmpty else {
                throw ClusterURLError("an empty entry in \"\(ClusterSettings.redacted(text))\" (two commas, or one at an end)")
            }
            let (host, port, credentials) = try ClusterSettings.parse(entry)
            let shard = Shard(address: RedisAddress(host: host, port: port), credentials: credentials)
            if shards.contains(where: { $0.address == shard.address }) {
                throw ClusterURLError("\(shard.address) is named twice in \"\(ClusterSettings.redacted(text))\": "
                    + "a shard is a server, and two shards cannot share one")
            }
            shards.append(shard)
        }
        self.shards = shards
    }

    /// A list of the given shards (tests).
    init(_ shards: [Shard]) {
        self.shards = shards
    }

    /// How many shards.
    var count: Int { shards.count }

    /// The placement over this list.
    var map: ShardMap { ShardMap(count: shards.count) }

    /// The servers, in order.
    var addresses: [RedisAddress] { shards.map(\.address) }

    /// What `{p}shards` records for this list: `redis://host:port` per shard, joined by `,`.
    var recorded: String { shards.map(\.url).joined(separator: ",") }

    /// `entry` without leading and trailing spaces (a list written `a, b` reads as `a,b`).
    private static func trimmed(_ entry: Substring) -> String {
        var view = entry
        while view.first == " " { view = view.dropFirst() }
        while view.last == " " { view = view.dropLast() }
        return String(view)
    }

    /// The server that holds `channel` under this list.
    func home(of channel: some Sequence<UInt8>) -> RedisAddress {
        shards[map.shard(of: channel)].address
    }
}
