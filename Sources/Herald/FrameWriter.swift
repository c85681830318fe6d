import HeraldWire

/// Builds one request line: `{"op":"sub","rid":3,"ch":"a.b"}` + `\n`.
///
/// Uses HeraldWire's byte appenders so strings are escaped exactly as the daemon expects.
struct FrameWriter {
    private(set) var bytes: [UInt8] = []

    /// Starts a frame for `op`, with `rid` when an answer is wanted.
    init(op: String, rid: Int? = nil) {
        bytes.reserveCapacity(96)
        bytes.appendRaw("{\"op\":")
        bytes.appendJSONString(op)
        if let rid { int("rid", rid) }
    }

    mutating func key(_ key: String) {
        bytes.append(UInt8(ascii: ","))
        bytes.appendJSONString(key)
        bytes.append(UInt8(ascii: ":"))
    }

    mutating func string(_ key: String, _ value: String?) {
        guard let value else { return }
        self.key(key)
        bytes.appendJSONString(value)
    }

    mutating func int(_ key: String, _ value: Int?) {
        guard let value else { return }
        self.key(key)
        bytes.appendInt(value)
    }

    mutating func bool(_ key: String, _ value: Bool?) {
        guard let value else { return }
        self.key(key)
        bytes.appendRaw(value ? "true" : "false")
    }

    mutating func raw(_ key: String, _ value: RawJSON?) {
        guard let value else { return }
        self.key(key)
        bytes.append(contentsOf: value.bytes)
    }

    mutating func strings(_ key: String, _ values: [String]?) {
        guard let values else { return }
        self.key(key)
        bytes.append(UInt8(ascii: "["))
        for (i, value) in values.enumerated() {
            if i > 0 { bytes.append(UInt8(ascii: ",")) }
            bytes.appendJSONString(value)
        }
        bytes.append(UInt8(ascii: "]"))
    }

    /// The finished line.
    func finished() -> [UInt8] {
        var line = bytes
        line.appendRaw("}\n")
        return line
    }
}
