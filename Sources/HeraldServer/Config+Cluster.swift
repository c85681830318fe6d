/// Reads the `cluster` section (`ClusterSettings`): `node` and exactly one of `redis` and
/// `sentinel` required; `key_prefix`, `node_timeout_ms`, `wait_replicas`, `wait_timeout_ms`,
/// `max_outstanding_ops` and `max_outstanding_bytes` optional. A bad or unknown key names
/// its place (`cluster.nod`).
extension ConfigFileReader {
    private static let clusterKeys: Set<String> = ["redis", "sentinel", "node", "key_prefix", "node_timeout_ms",
                                                   "wait_replicas", "wait_timeout_ms", "max_outstanding_ops",
                                                   "max_outstanding_bytes"]
    private static let sentinelKeys: Set<String> = ["master", "addresses"]

    /// The cluster settings, or nil when the section is absent or null.
    func clusterSettings() throws(ConfigProblem) -> ClusterSettings? {
        let key = ConfigCodingKey(.cluster)
        guard container.contains(key), (try? container.decodeNil(forKey: key)) != true else { return nil }
        guard let section = try? container.nestedContainer(keyedBy: ConfigCodingKey.self, forKey: key) else {
            throw .badValue(.cluster, found: "not an object")
        }
        let place = ConfigKey.cluster.rawValue
        try Self.rejectUnknown(in: section, allowed: Self.clusterKeys, at: place)
        let sentinel = try Self.sentinel(section, at: place)
        if sentinel == nil, !section.contains(ConfigCodingKey(stringValue: "redis")) {
            throw Self.problem(place + ".redis", "required: give redis (one server) or sentinel (a primary found through Sentinel)")
        }
        let redis = try Self.text(section, "redis", at: place, required: false)
        if sentinel != nil, redis != nil {
            throw Self.problem(place + ".redis", "give either redis (one server) or sentinel (a primary found through Sentinel), not both")
        }
        let node = try Self.text(section, "node", at: place, required: true) ?? ""
        guard node.utf8.count <= 64, node.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "\"") }) else {
            throw Self.problem(place + ".node", "1 to 64 printable ASCII characters, no spaces or quotes")
        }
        let prefix = try Self.text(section, "key_prefix", at: place, required: false) ?? ClusterSettings.defaultKeyPrefix
        let timeout = try Self.integer(section, "node_timeout_ms", at: place, in: ClusterSettings.nodeTimeoutRange)
            ?? ClusterSettings.defaultNodeTimeoutMs
        var settings: ClusterSettings
        if let sentinel {
            settings = ClusterSettings(sentinel: sentinel, node: node, keyPrefix: prefix, nodeTimeoutMs: timeout)
        } else {
            do throws(ClusterURLError) {
                settings = try ClusterSettings(redis: redis ?? "", node: node, keyPrefix: prefix, nodeTimeoutMs: timeout)
            } catch {
                throw Self.problem(place + ".redis", error.description)
            }
        }
        settings.waitReplicas = try Self.integer(section, "wait_replicas", at: place, in: ClusterSettings.waitReplicasRange) ?? 0
        settings.waitTimeoutMs = try Self.integer(section, "wait_timeout_ms", at: place, in: ClusterSettings.waitTimeoutRange)
            ?? ClusterSettings.defaultWaitTimeoutMs
        settings.maxOutstandingOps = try Self.integer(section, "max_outstanding_ops", at: place,
                                                      in: ClusterSettings.maxOutstandingOpsRange)
            ?? ClusterSettings.defaultMaxOutstandingOps
        settings.maxOutstandingBytes = try Self.integer(section, "max_outstanding_bytes", at: place,
                                                        in: ClusterSettings.maxOutstandingBytesRange)
            ?? ClusterSettings.defaultMaxOutstandingBytes
        return settings
    }

    /// `cluster.sentinel: { master: NAME, addresses: ["host:port", …] }`, or nil when absent.
    private static func sentinel(_ section: KeyedDecodingContainer<ConfigCodingKey>,
                                 at place: String) throws(ConfigProblem) -> SentinelSettings? {
        let key = ConfigCodingKey(stringValue: "sentinel")
        guard section.contains(key) else { return nil }
        let here = place + ".sentinel"
        guard let object = try? section.nestedContainer(keyedBy: ConfigCodingKey.self, forKey: key) else {
            throw problem(here, "expected an object { master: NAME, addresses: [\"host:port\", …] }")
        }
        try rejectUnknown(in: object, allowed: sentinelKeys, at: here)
        let master = try text(object, "master", at: here, required: true) ?? ""
        let addressesKey = ConfigCodingKey(stringValue: "addresses")
        guard object.contains(addressesKey) else { throw problem(here + ".addresses", "required") }
        guard let addresses = try? object.decode([String].self, forKey: addressesKey) else {
            throw problem(here + ".addresses", "expected a list of \"host:port\" strings")
        }
        do throws(ClusterURLError) {
            return try SentinelSettings(master: master, addresses: addresses)
        } catch {
            throw problem(here, error.description)
        }
    }

    /// An optional integer in `range`, or nil when absent.
    private static func integer(_ section: KeyedDecodingContainer<ConfigCodingKey>, _ name: String, at place: String,
                                in range: ClosedRange<Int>) throws(ConfigProblem) -> Int? {
        let key = ConfigCodingKey(stringValue: name)
        guard section.contains(key) else { return nil }
        guard let value = try? section.decode(Int.self, forKey: key), range.contains(value) else {
            throw problem(place + "." + name, "expected an integer from \(range.lowerBound) to \(range.upperBound)")
        }
        return value
    }

    private static func text(_ section: KeyedDecodingContainer<ConfigCodingKey>, _ name: String, at place: String,
                             required: Bool) throws(ConfigProblem) -> String? {
        let key = ConfigCodingKey(stringValue: name)
        guard section.contains(key) else {
            if required { throw problem(place + "." + name, "required") }
            return nil
        }
        guard let value = try? section.decode(String.self, forKey: key), !value.isEmpty else {
            throw problem(place + "." + name, "expected a non-empty string")
        }
        return value
    }
}
