/// `cluster.sentinel`: where the cluster finds its Redis primary when Redis runs under
/// Sentinel (docs/cluster.md, "Redis failover: Sentinel and `wait_replicas`").
///
///     cluster: { sentinel: { master: "herald", addresses: ["127.0.0.1:26379", "127.0.0.1:26380"] }, node: "a" }
///
/// Used instead of `cluster.redis`: a node asks the sentinels in the listed order for the
/// primary of `master` at start and again whenever a Redis link is lost.
public struct SentinelSettings: Equatable, Sendable {
    /// The name the sentinels monitor the primary under (`sentinel monitor NAME …`).
    public var master: String
    /// The sentinels, asked in this order until one answers.
    public var addresses: [RedisAddress]
    /// What the sentinels are sent as `AUTH` (`sentinel.user`, `password`, `password_file`,
    /// `password_env`); the primary gets the cluster's own (`ClusterSettings.redisCredentials`).
    public var credentials: RedisCredentials?

    /// The most sentinels a node lists (more would only slow a failed lookup down).
    public static let maxAddresses = 16

    /// Creates the settings from the master's name and `host:port` texts.
    /// - Throws: `ClusterURLError` when the name is empty or has spaces, when there is no
    ///   address or more than `maxAddresses`, or when an address is not `host:port`.
    public init(master: String, addresses: [String]) throws(ClusterURLError) {
        guard !master.isEmpty, master.utf8.count <= 128, master.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw ClusterURLError("master: 1 to 128 printable ASCII characters, no spaces, found \"\(master)\"")
        }
        guard !addresses.isEmpty, addresses.count <= Self.maxAddresses else {
            throw ClusterURLError("addresses: 1 to \(Self.maxAddresses) sentinels as \"host:port\"")
        }
        self.master = master
        self.addresses = []
        for text in addresses { self.addresses.append(try RedisAddress(parsing: text)) }
    }
}
