/// Reads the `cluster` section (`ClusterSettings`): `redis` and `node` required,
/// `key_prefix` and `node_timeout_ms` optional. A bad or unknown key names its place (`cluster.nod`).
extension ConfigFileReader {
    private static let clusterKeys: Set<String> = ["redis", "node", "key_prefix", "node_timeout_ms"]

    /// The cluster settings, or nil when the section is absent or null.
    func clusterSettings() throws(ConfigProblem) -> ClusterSettings? {
        let key = ConfigCodingKey(.cluster)
        guard container.contains(key), (try? container.decodeNil(forKey: key)) != true else { return nil }
        guard let section = try? container.nestedContainer(keyedBy: ConfigCodingKey.self, forKey: key) else {
            throw .badValue(.cluster, found: "not an object")
        }
        let place = ConfigKey.cluster.rawValue
        try Self.rejectUnknown(in: section, allowed: Self.clusterKeys, at: place)
        let redis = try Self.text(section, "redis", at: place, required: true) ?? ""
        let node = try Self.text(section, "node", at: place, required: true) ?? ""
        guard node.utf8.count <= 64, node.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "\"") }) else {
            throw Self.problem(place + ".node", "1 to 64 printable ASCII characters, no spaces or quotes")
        }
        let prefix = try Self.text(section, "key_prefix", at: place, required: false) ?? ClusterSettings.defaultKeyPrefix
        let timeout = try Self.nodeTimeout(section, at: place)
        do throws(ClusterURLError) {
            return try ClusterSettings(redis: redis, node: node, keyPrefix: prefix, nodeTimeoutMs: timeout)
        } catch {
            throw Self.problem(place + ".redis", error.description)
        }
    }

    private static func nodeTimeout(_ section: KeyedDecodingContainer<ConfigCodingKey>, at place: String) throws(ConfigProblem) -> Int {
        let key = ConfigCodingKey(stringValue: "node_timeout_ms")
        guard section.contains(key) else { return ClusterSettings.defaultNodeTimeoutMs }
        let range = ClusterSettings.nodeTimeoutRange
        guard let value = try? section.decode(Int.self, forKey: key), range.contains(value) else {
            throw problem(place + ".node_timeout_ms", "expected an integer from \(range.lowerBound) to \(range.upperBound)")
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
