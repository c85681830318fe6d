/// A problem found while decoding a config, before the file name is known.
///
/// `Decodable.init(from:)` cannot see the path; `Config.decode(json5:source:)` catches this and
/// prefixes the file name to make the final `ConfigError`.
struct ConfigProblem: Error, CustomStringConvertible, Sendable {
    /// The message without the file name, e.g. `unknown key "prot"`.
    var description: String

    /// A value of the wrong type or outside its rule.
    static func badValue(_ key: ConfigKey, found: String) -> ConfigProblem {
        ConfigProblem(description: "bad value for \"\(key.rawValue)\": \(found) (expected \(key.rule.expectation))")
    }

    /// Keys the file has but the config does not know.
    static func unknownKeys(_ keys: [String]) -> ConfigProblem {
        let quoted = keys.map { "\"\($0)\"" }.joined(separator: ", ")
        return ConfigProblem(description: keys.count == 1 ? "unknown key \(quoted)" : "unknown keys \(quoted)")
    }
}
