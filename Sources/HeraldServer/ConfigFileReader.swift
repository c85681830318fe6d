/// Reads one key at a time out of the decoded file, checking each value against its `ValueRule`.
///
/// Every failure becomes a `ConfigProblem` naming the key, what was found and what is allowed;
/// Foundation's own decoding errors say neither in operator terms.
struct ConfigFileReader {
    let container: KeyedDecodingContainer<ConfigCodingKey>

    /// Fails when the file has keys the config does not know, naming all of them.
    func rejectUnknownKeys() throws(ConfigProblem) {
        let known = Set(ConfigKey.allCases.map(\.rawValue))
        let unknown = container.allKeys.map(\.stringValue).filter { !known.contains($0) }.sorted()
        if !unknown.isEmpty {
            throw .unknownKeys(unknown)
        }
    }

    /// The integer at `key`, or `nil` when the key is absent.
    func integer(_ key: ConfigKey) throws(ConfigProblem) -> Int? {
        guard try isPresent(key) else { return nil }
        guard let value = try? container.decode(Int.self, forKey: ConfigCodingKey(key)),
              key.rule.admits(value) else {
            throw .badValue(key, found: foundDescription(key))
        }
        return value
    }

    /// The string at `key`, or `nil` when the key is absent (or `null` on an optional key).
    func string(_ key: ConfigKey) throws(ConfigProblem) -> String? {
        guard try isPresent(key) else { return nil }
        guard let value = try? container.decode(String.self, forKey: ConfigCodingKey(key)),
              key.rule.admits(value) else {
            throw .badValue(key, found: foundDescription(key))
        }
        return value
    }

    /// The boolean at `key`, or `nil` when the key is absent.
    func boolean(_ key: ConfigKey) throws(ConfigProblem) -> Bool? {
        guard try isPresent(key) else { return nil }
        guard let value = try? container.decode(Bool.self, forKey: ConfigCodingKey(key)) else {
            throw .badValue(key, found: foundDescription(key))
        }
        return value
    }

    /// The enum case spelled at `key`, or `nil` when the key is absent.
    func choice<Choice: RawRepresentable<String>>(_ key: ConfigKey, as type: Choice.Type) throws(ConfigProblem) -> Choice? {
        guard let spelling = try string(key) else { return nil }
        guard let value = Choice(rawValue: spelling) else {
            throw .badValue(key, found: quoted(spelling))
        }
        return value
    }

    /// Whether a value should be read; `null` counts as absent only where the key is optional,
    /// because `port: null` is more likely a mistake than a wish for the default.
    private func isPresent(_ key: ConfigKey) throws(ConfigProblem) -> Bool {
        let codingKey = ConfigCodingKey(key)
        guard container.contains(codingKey) else { return false }
        let isNull = (try? container.decodeNil(forKey: codingKey)) ?? false
        if isNull {
            if key.isOptional { return false }
            throw .badValue(key, found: "null")
        }
        return true
    }

    /// Renders the offending value the way the operator wrote it, as far as JSON allows.
    private func foundDescription(_ key: ConfigKey) -> String {
        let codingKey = ConfigCodingKey(key)
        if let value = try? container.decode(Int.self, forKey: codingKey) { return String(value) }
        if let value = try? container.decode(Double.self, forKey: codingKey) { return String(value) }
        if let value = try? container.decode(Bool.self, forKey: codingKey) { return String(value) }
        if let value = try? container.decode(String.self, forKey: codingKey) { return quoted(value) }
        if (try? container.nestedUnkeyedContainer(forKey: codingKey)) != nil { return "an array" }
        return "an object"
    }

    private func quoted(_ text: String) -> String {
        LogValueQuoting.quoted(text)
    }
}
