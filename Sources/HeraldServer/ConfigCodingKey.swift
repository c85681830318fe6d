/// A coding key that accepts any spelling, so the decoder can list the keys the file really has.
///
/// A fixed `CodingKeys` enum would silently skip unknown keys; listing them all is how a typo
/// such as `prot` becomes an error instead of a default.
struct ConfigCodingKey: CodingKey {
    let stringValue: String
    var intValue: Int? { nil }

    init(stringValue: String) {
        self.stringValue = stringValue
    }

    init?(intValue: Int) {
        return nil
    }

    init(_ key: ConfigKey) {
        self.stringValue = key.rawValue
    }
}
