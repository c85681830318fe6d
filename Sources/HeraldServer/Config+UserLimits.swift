import HeraldBroker

/// Reads `user_limits` (every user's share) and each user's own `limits`, which override
/// some of its figures:
///
///     user_limits: { connections: 1000, subscriptions: 1000000, channels: 1000000,
///                    retained_bytes: 67108864, history_bytes: 16777216, pending_bytes: 268435456,
///                    args_bytes: 16777216 },
///     auth: { users: [ { name: "bulk", token_hash: "…", limits: { connections: 5000 } } ] }
///
/// Every figure is a positive integer; an unknown key or a bad value names its place
/// (`user_limits.conections`, `auth.users[2].limits.channels`).
extension ConfigFileReader {
    /// The figures of a `UserLimits`, by their config spelling.
    private static var limitKeys: [(String, WritableKeyPath<UserLimits, Int>)] {
        [("connections", \.connections), ("subscriptions", \.subscriptions), ("channels", \.channels),
         ("retained_bytes", \.retainedBytes), ("history_bytes", \.historyBytes), ("pending_bytes", \.pendingBytes),
         ("args_bytes", \.argsBytes), ("pub_per_s", \.pubPerS), ("bytes_in_per_s", \.bytesInPerS),
         ("ops_per_s", \.opsPerS)]
    }

    /// The top-level `user_limits` over the protocol's defaults, or nil when absent.
    func userLimits() throws(ConfigProblem) -> UserLimits? {
        let key = ConfigCodingKey(.userLimits)
        guard container.contains(key) else { return nil }
        guard let section = try? container.nestedContainer(keyedBy: ConfigCodingKey.self, forKey: key) else {
            throw .badValue(.userLimits, found: "not an object")
        }
        return try Self.limits(section, at: ConfigKey.userLimits.rawValue, over: UserLimits())
    }

    /// A user's own `limits` (the key `name` in `object`) over `base`, or nil when absent.
    static func userLimits(in object: KeyedDecodingContainer<ConfigCodingKey>, _ name: String, at place: String,
                           over base: UserLimits) throws(ConfigProblem) -> UserLimits? {
        let key = ConfigCodingKey(stringValue: name)
        guard object.contains(key) else { return nil }
        let here = place + "." + name
        guard let section = try? object.nestedContainer(keyedBy: ConfigCodingKey.self, forKey: key) else {
            throw problem(here, "expected an object of limits { connections?, subscriptions?, channels?, "
                + "retained_bytes?, history_bytes?, pending_bytes?, args_bytes?, pub_per_s?, bytes_in_per_s?, ops_per_s? }")
        }
        return try limits(section, at: here, over: base)
    }

    private static func limits(_ section: KeyedDecodingContainer<ConfigCodingKey>, at place: String,
                               over base: UserLimits) throws(ConfigProblem) -> UserLimits {
        try rejectUnknown(in: section, allowed: Set(limitKeys.map(\.0)), at: place)
        var limits = base
        for (name, path) in limitKeys {
            let key = ConfigCodingKey(stringValue: name)
            guard section.contains(key) else { continue }
            guard let value = try? section.decode(Int.self, forKey: key), value >= 1 else {
                throw problem(place + "." + name, "expected a positive integer")
            }
            limits[keyPath: path] = value
        }
        return limits
    }
}
