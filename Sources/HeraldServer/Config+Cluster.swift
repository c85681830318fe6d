import Foundation

/// Reads the `cluster` section (`ClusterSettings`): `node` and exactly one of `redis`,
/// `sentinel` and `shards` required; `key_prefix`, `node_timeout_ms`, `wait_replicas`, `wait_timeout_ms`,
/// `max_outstanding_ops`, `max_outstanding_bytes`, `collect_keys` and the Redis credentials optional. A bad
/// or unknown key names its place (`cluster.nod`).
extension ConfigFileReader {
    private static let clusterKeys: Set<String> = ["redis", "sentinel", "node", "key_prefix", "node_timeout_ms",
                                                   "wait_replicas", "wait_timeout_ms", "max_outstanding_ops",
                                                   "max_outstanding_bytes", "redis_user", "redis_password",
                                                   "redis_password_file", "redis_password_env", "collect_keys", "shards"]
    private static let sentinelKeys: Set<String> = ["master", "addresses", "user", "password", "password_file",
                                                    "password_env"]

    /// The cluster settings, or nil when the section is absent or null.
    func clusterSettings() throws(ConfigProblem) -> ClusterSettings? {
        let key = ConfigCodingKey(.cluster)
        guard container.contains(key), (try? container.decodeNil(forKey: key)) != true else { return nil }
        guard let section = try? container.nestedContainer(keyedBy: ConfigCodingKey.self, forKey: key) else {
            throw .badValue(.cluster, found: "not an object")
        }
        let place = ConfigKey.cluster.rawValue
        try Self.rejectUnknown(in: section, allowed: Self.clusterKeys, at: place)
        let shards = try Self.shards(section, at: place)
        var sentinel = try Self.sentinel(section, at: place)
        if shards != nil, sentinel != nil || section.contains(ConfigCodingKey(stringValue: "redis")) {
            throw Self.problem(place + ".shards", "give shards (several Redis primaries) in place of redis and sentinel, not beside them")
        }
        if sentinel == nil, shards == nil, !section.contains(ConfigCodingKey(stringValue: "redis")) {
            throw Self.problem(place + ".redis", "required: give redis (one server), sentinel (a primary found through Sentinel) or shards")
        }
        var redis = try Self.text(section, "redis", at: place, required: false)
        if let first = shards?.first {
            redis = first.url
            sentinel = first.sentinel
        }
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
                throw Self.problem(place + (shards == nil ? ".redis" : ".shards[0]"), error.description)
            }
        }
        if let shards {
            settings.otherShards = try Self.otherShards(shards.dropFirst(), at: place)
            let listed = settings.shardList.split(separator: ",")
            if Set(listed).count != listed.count { throw Self.problem(place + ".shards", "a shard is listed twice") }
        }
        if let credentials = try Self.credentials(section, at: place, stem: "redis_") {
            guard settings.redisCredentials == nil, settings.otherShards.allSatisfy({ $0.credentials == nil }) else {
                throw Self.problem(place + ".redis", "give the password either in the URL or as redis_password*, not both")
            }
            settings.redisCredentials = credentials
            for index in settings.otherShards.indices { settings.otherShards[index].credentials = credentials }
        }
        let waitReplicas = try Self.integer(section, "wait_replicas", at: place, in: ClusterSettings.waitReplicasRange)
        settings.waitReplicas = waitReplicas ?? 0
        settings.waitReplicasIsDefault = waitReplicas == nil
        settings.waitTimeoutMs = try Self.integer(section, "wait_timeout_ms", at: place, in: ClusterSettings.waitTimeoutRange)
            ?? ClusterSettings.defaultWaitTimeoutMs
        settings.maxOutstandingOps = try Self.integer(section, "max_outstanding_ops", at: place,
                                                      in: ClusterSettings.maxOutstandingOpsRange)
            ?? ClusterSettings.defaultMaxOutstandingOps
        settings.maxOutstandingBytes = try Self.integer(section, "max_outstanding_bytes", at: place,
                                                        in: ClusterSettings.maxOutstandingBytesRange)
            ?? ClusterSettings.defaultMaxOutstandingBytes
        settings.collectKeys = try Self.integer(section, "collect_keys", at: place, in: ClusterSettings.collectKeysRange)
            ?? ClusterSettings.defaultCollectKeys
        return settings
    }

    /// The most shards `cluster.shards` may list.
    static let maxShards = 64

    /// `cluster.shards: ["redis://host:port", { sentinel: { master, addresses } }, …]`, each
    /// entry as a URL or a Sentinel group, or nil when absent.
    private static func shards(_ section: KeyedDecodingContainer<ConfigCodingKey>,
                               at place: String) throws(ConfigProblem) -> [(url: String?, sentinel: SentinelSettings?)]? {
        let key = ConfigCodingKey(stringValue: "shards")
        guard section.contains(key) else { return nil }
        let here = place + ".shards"
        guard var list = try? section.nestedUnkeyedContainer(forKey: key), let count = list.count,
              (1...maxShards).contains(count) else {
            throw problem(here, "expected a list of 1 to \(maxShards) shards, each \"redis://host:port\" or { sentinel: { master, addresses } }")
        }
        var shards: [(url: String?, sentinel: SentinelSettings?)] = []
        while !list.isAtEnd {
            let at = here + "[\(shards.count)]"
            if let url = try? list.decode(String.self) {
                shards.append((url, nil))
                continue
            }
            guard let entry = try? list.nestedContainer(keyedBy: ConfigCodingKey.self) else {
                throw problem(at, "expected \"redis://host:port\" or { sentinel: { master, addresses } }")
            }
            try rejectUnknown(in: entry, allowed: ["sentinel"], at: at)
            guard let sentinel = try Self.sentinel(entry, at: at) else { throw problem(at + ".sentinel", "required") }
            shards.append((nil, sentinel))
        }
        return shards
    }

    /// The shards after the first, parsed (`ClusterShard`).
    private static func otherShards(_ entries: ArraySlice<(url: String?, sentinel: SentinelSettings?)>,
                                    at place: String) throws(ConfigProblem) -> [ClusterShard] {
        var shards: [ClusterShard] = []
        for (offset, entry) in entries.enumerated() {
            if let sentinel = entry.sentinel {
                shards.append(ClusterShard(sentinel: sentinel))
                continue
            }
            do throws(ClusterURLError) {
                let (host, port, credentials) = try ClusterSettings.parse(entry.url ?? "")
                shards.append(ClusterShard(host: host, port: port, credentials: credentials))
            } catch {
                throw problem(place + ".shards[\(offset + 1)]", error.description)
            }
        }
        return shards
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
        var settings: SentinelSettings
        do throws(ClusterURLError) {
            settings = try SentinelSettings(master: master, addresses: addresses)
        } catch {
            throw problem(here, error.description)
        }
        settings.credentials = try credentials(object, at: here, stem: "")
        return settings
    }

    /// `STEMuser` with one of `STEMpassword`, `STEMpassword_file` (the file's first line) or
    /// `STEMpassword_env` (an environment variable's value), or nil when none is given: so
    /// the secret need not sit in the config. Errors name the key, never the secret.
    private static func credentials(_ section: KeyedDecodingContainer<ConfigCodingKey>, at place: String,
                                    stem: String) throws(ConfigProblem) -> RedisCredentials? {
        let user = try text(section, stem + "user", at: place, required: false)
        var given: [(String, String)] = []
        for name in ["password", "password_file", "password_env"] {
            if let value = try text(section, stem + name, at: place, required: false) { given.append((name, value)) }
        }
        guard given.count <= 1 else {
            throw problem(place + "." + stem + "password", "give one of \(stem)password, \(stem)password_file and \(stem)password_env")
        }
        guard let (kind, value) = given.first else {
            if user != nil { throw problem(place + "." + stem + "user", "needs a password (\(stem)password, _file or _env)") }
            return nil
        }
        let password: String
        switch kind {
        case "password_file":
            guard let contents = try? String(contentsOfFile: value, encoding: .utf8),
                  let line = contents.split(separator: "\n", omittingEmptySubsequences: false).first,
                  !line.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else {
                throw problem(place + "." + stem + kind, "cannot read a password from \"\(value)\"")
            }
            password = line.trimmingCharacters(in: .whitespacesAndNewlines)
        case "password_env":
            guard let variable = ProcessInfo.processInfo.environment[value], !variable.isEmpty else {
                throw problem(place + "." + stem + kind, "the environment variable \(value) is not set or empty")
            }
            password = variable
        default:
            password = value
        }
        return RedisCredentials(user: user, password: password)
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
