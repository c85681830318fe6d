import Foundation

/// One frame from the daemon, with the byte range of each top-level field's value.
///
/// Why not `JSONSerialization`: `data` and `args` must reach the caller as the exact bytes the
/// publisher sent (to decode them into the caller's type, or print them unchanged), so the
/// frame is only split at its top level and small fields are decoded on demand. Anything that
/// does not have the expected shape makes `init` return `nil` (reported, never a crash).
struct ServerFrame: Sendable {
    /// The line, without its `\n`.
    let bytes: [UInt8]
    /// Top-level fields in wire order: the key (packed, see `FieldKey`) and its value's range.
    /// (Read directly by one-pass readers such as `EventFields`.)
    let fields: [(key: FieldKey, range: Range<Int>)]

    /// The first key: `info`, `ok`, `error`, `event`, `ping`, `pong`, `removed`, ….
    var kind: String { fields.first.map { name(of: $0.key) } ?? "" }

    /// Splits a line into its top-level fields.
    /// - Parameter bytes: one line from the daemon.
    /// - Returns: nil when the line is not one JSON object with string keys.
    init?(_ bytes: [UInt8]) {
        let fields = bytes.withUnsafeBytes { raw in
            var cursor = JSONCursor(bytes: raw)
            return cursor.topLevelFields()
        }
        guard let fields else { return nil }
        self.bytes = bytes
        self.fields = fields
    }

    /// The top-level keys in wire order.
    var keys: [String] { fields.map { name(of: $0.key) } }

    /// The range of `key`'s value.
    ///
    /// Why packed keys: every event frame is asked for about fifteen fields; comparing one
    /// integer per field instead of a `String` (made per field, compared per lookup) took
    /// most of the raw delivery path's time.
    func range(_ key: String) -> Range<Int>? {
        var key = key
        if let wanted = key.withUTF8({ FieldKey.packed($0) }) {
            for field in fields where field.key.packed == wanted { return field.range }
            return nil
        }
        return fields.first(where: { $0.key.packed == nil && name(of: $0.key) == key })?.range
        // (`key` was made mutable for `withUTF8`, which small strings serve from the stack.)
    }

    /// A key's text.
    private func name(of key: FieldKey) -> String {
        bytes.withUnsafeBytes { JSONCursor.decodeString(UnsafeRawBufferPointer(rebasing: $0[key.quoted])) } ?? ""
    }

    /// The raw value of `key`, or nil when absent.
    func raw(_ key: String) -> RawJSON? {
        range(key).map(raw(at:))
    }

    /// The string value of `key`, or nil when absent or not a string.
    func string(_ key: String) -> String? {
        range(key).flatMap(string(at:))
    }

    /// The integer value of `key`, or nil when absent or not an integer.
    func int(_ key: String) -> Int? {
        range(key).flatMap(int(at:))
    }

    /// The boolean value of `key`, or nil when absent or not a boolean.
    func bool(_ key: String) -> Bool? {
        range(key).flatMap(bool(at:))
    }

    /// The value at `range` (a field's), as raw JSON.
    func raw(at range: Range<Int>) -> RawJSON {
        RawJSON(bytes: Array(bytes[range]))
    }

    /// The value at `range` as a string; nil when it is not one.
    func string(at range: Range<Int>) -> String? {
        bytes.withUnsafeBytes { JSONCursor.decodeString(UnsafeRawBufferPointer(rebasing: $0[range])) }
    }

    /// The value at `range` as an integer; nil when it is not one.
    func int(at range: Range<Int>) -> Int? {
        bytes.withUnsafeBytes { JSONCursor.decodeInt(UnsafeRawBufferPointer(rebasing: $0[range])) }
    }

    /// The value at `range` as a boolean; nil when it is not one.
    func bool(at range: Range<Int>) -> Bool? {
        bytes.withUnsafeBytes { JSONCursor.decodeBool(UnsafeRawBufferPointer(rebasing: $0[range])) }
    }

    /// The line as text, for messages and the CLI.
    var text: String { String(decoding: bytes, as: UTF8.self) }
}

/// A forward-only walk over one JSON text, just deep enough to find top-level value spans.
///
/// Over raw bytes (no bounds-checked `Array` subscripts, no retain of an array per step):
/// the event path runs it over the read buffer itself, without copying the line first
/// (`EventFields.init?(line:)`).
struct JSONCursor {
    let bytes: UnsafeRawBufferPointer
    var index = 0

    init(bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
    }

    /// The fields of a top-level object, or nil when the text is not one.
    mutating func topLevelFields() -> [(key: FieldKey, range: Range<Int>)]? {
        var fields: [(key: FieldKey, range: Range<Int>)] = []
        fields.reserveCapacity(8)
        guard forEachTopLevelField({ key, range in fields.append((key, range)) }) else { return nil }
        return fields
    }

    /// The spans of the elements of a top-level array, or nil when the text is not one array
    /// (a `presence` answer's `members`, whose `info` must stay raw bytes).
    mutating func arrayElements() -> [Range<Int>]? {
        skipSpace()
        guard take(UInt8(ascii: "[")) else { return nil }
        var elements: [Range<Int>] = []
        skipSpace()
        if take(UInt8(ascii: "]")) { return elements }
        while true {
            skipSpace()
            let start = index
            guard skipValue() else { return nil }
            elements.append(start..<index)
            skipSpace()
            if take(UInt8(ascii: ",")) { continue }
            return take(UInt8(ascii: "]")) ? elements : nil
        }
    }

    /// Calls `body` with each top-level field of the object, in wire order.
    /// - Parameter last: a packed key the producer always writes as the object's last field
    ///   (the daemon's `data`, docs/protocol.md "Frames"): its value is taken to run to the
    ///   object's closing brace without being walked (`lastValueEnd`). Nil walks every value.
    /// - Returns: false when the text is not one JSON object with string keys (`body` may
    ///   have seen some fields by then: the caller drops what it gathered).
    mutating func forEachTopLevelField(last: UInt64? = nil, _ body: (FieldKey, Range<Int>) -> Void) -> Bool {
        skipSpace()
        guard take(UInt8(ascii: "{")) else { return false }
        skipSpace()
        // (An empty object is taken without looking at what follows, as before.)
        if take(UInt8(ascii: "}")) { return true }
        while true {
            skipSpace()
            let keyStart = index
            let key: FieldKey
            if let short = shortKey() {
                key = short
            } else {
                guard skipString() else { return false }
                key = FieldKey(bytes: bytes, quoted: keyStart..<index)
            }
            if key.packed == nil, Self.decodeString(UnsafeRawBufferPointer(rebasing: bytes[keyStart..<index])) == nil { return false }
            skipSpace()
            guard take(UInt8(ascii: ":")) else { return false }
            skipSpace()
            let valueStart = index
            if let last, key.packed == last {
                guard let end = lastValueEnd() else { return false }
                body(key, valueStart..<end)
                return true
            }
            guard skipValue(), index > valueStart else { return false }
            body(key, valueStart..<index)
            skipSpace()
            if take(UInt8(ascii: ",")) { continue }
            guard take(UInt8(ascii: "}")) else { return false }
            skipSpace()
            return index == bytes.count
        }
    }

    /// The end of a value at `index` that is the object's last field: the object's closing
    /// brace is the text's last non-space byte, and the value ends before it (and its spaces).
    ///
    /// Why not walk it: the daemon writes `data` last in every frame, and walking the payload
    /// only to find where it ends was a fifth of the client's event path (the typed decoder
    /// walks it again anyway). The shape is still checked at both ends (`{`…`}`, `[`…`]`,
    /// `"`…`"`, a number or literal ending in a digit or letter), so a frame that breaks the
    /// rule is malformed, not misread, unless its extra fields mimic a whole value.
    /// Also called by `EventFields.canonical`, which has read the last field's key itself.
    /// - Returns: nil when the ends do not match.
    mutating func lastValueEnd() -> Int? {
        var end = bytes.count
        while end > index, Self.isSpace(bytes[end - 1]) { end -= 1 }
        guard end > index, bytes[end - 1] == UInt8(ascii: "}") else { return nil }
        end -= 1
        while end > index, Self.isSpace(bytes[end - 1]) { end -= 1 }
        guard end > index else { return nil }
        let first = bytes[index]
        let final = bytes[end - 1]
        let matches: Bool
        switch first {
        case UInt8(ascii: "{"): matches = final == UInt8(ascii: "}") && end - index >= 2
        case UInt8(ascii: "["): matches = final == UInt8(ascii: "]") && end - index >= 2
        case UInt8(ascii: "\""): matches = final == UInt8(ascii: "\"") && end - index >= 2
        default:
            let plain = first == UInt8(ascii: "-") || (first >= UInt8(ascii: "0") && first <= UInt8(ascii: "9"))
                || first == UInt8(ascii: "t") || first == UInt8(ascii: "f") || first == UInt8(ascii: "n")
            let ending = (final >= UInt8(ascii: "0") && final <= UInt8(ascii: "9")) || (final >= UInt8(ascii: "a") && final <= UInt8(ascii: "z"))
            matches = plain && ending
        }
        guard matches else { return nil }
        index = bytes.count
        return end
    }

    private static func isSpace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }

    private mutating func take(_ byte: UInt8) -> Bool {
        guard index < bytes.count, bytes[index] == byte else { return false }
        index += 1
        return true
    }

    /// A plain key of at most 7 bytes at `index` (its opening quote), read and packed from one
    /// 8-byte load; nil (nothing moved) for anything else, which the general path reads.
    private mutating func shortKey() -> FieldKey? {
        guard index + 9 <= bytes.count, bytes[index] == UInt8(ascii: "\"") else { return nil }
        let word = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: index + 1, as: UInt64.self))
        let hits = Self.lanes(word, equalTo: UInt8(ascii: "\"")) | Self.lanes(word, equalTo: UInt8(ascii: "\\"))
        let length = hits.trailingZeroBitCount >> 3
        // The first special byte must be the closing quote, within the first 7.
        guard length <= 7, bytes[index + 1 + length] == UInt8(ascii: "\"") else { return nil }
        let contents = length == 0 ? 0 : word & (UInt64.max >> (64 - UInt64(length) * 8))
        let key = FieldKey(quoted: index..<(index + length + 2), packed: UInt64(length) << 56 | contents)
        index += length + 2
        return key
    }

    private mutating func skipSpace() {
        // Daemon frames have no whitespace: one comparison usually decides.
        if index < bytes.count, bytes[index] > 0x20 { return }
        while index < bytes.count, Self.isSpace(bytes[index]) {
            index += 1
        }
    }

    /// Skips a string starting at `index` (which must be its opening quote).
    private mutating func skipString() -> Bool {
        guard take(UInt8(ascii: "\"")) else { return false }
        while true {
            // Eight bytes at a time to the next quote or backslash.
            while index + 8 <= bytes.count {
                let word = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self))
                let hits = Self.lanes(word, equalTo: UInt8(ascii: "\"")) | Self.lanes(word, equalTo: UInt8(ascii: "\\"))
                if hits == 0 {
                    index += 8
                    continue
                }
                index += hits.trailingZeroBitCount >> 3
                break
            }
            guard index < bytes.count else { return false }
            let byte = bytes[index]
            index += 1
            if byte == UInt8(ascii: "\\") {
                index += 1
            } else if byte == UInt8(ascii: "\"") {
                return index <= bytes.count
            }
        }
    }

    /// The high bit of each byte lane of `word` that equals `byte`: exact for the lowest such
    /// lane (the borrow of the classic zero-byte test can only flag lanes above a real hit).
    private static func lanes(_ word: UInt64, equalTo byte: UInt8) -> UInt64 {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let x = word ^ (ones &* UInt64(byte))
        return (x &- ones) & ~x & 0x8080_8080_8080_8080
    }

    /// Moves `index` to the next quote, brace or bracket (or to the last eight bytes).
    private mutating func skipToStructure() {
        while index + 8 <= bytes.count {
            let word = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self))
            // `b | 0x20` is `{` exactly for `{` and `[`, and `}` exactly for `}` and `]`.
            let folded = word | 0x2020_2020_2020_2020
            let hits = Self.lanes(word, equalTo: UInt8(ascii: "\"")) | Self.lanes(folded, equalTo: UInt8(ascii: "{"))
                | Self.lanes(folded, equalTo: UInt8(ascii: "}"))
            if hits != 0 {
                index += hits.trailingZeroBitCount >> 3
                return
            }
            index += 8
        }
    }

    /// Skips one value of any kind; containers are skipped by depth, strings respected.
    private mutating func skipValue() -> Bool {
        guard index < bytes.count else { return false }
        switch bytes[index] {
        case UInt8(ascii: "\""):
            return skipString()
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            var depth = 0
            while index < bytes.count {
                switch bytes[index] {
                case UInt8(ascii: "\""):
                    guard skipString() else { return false }
                    continue
                case UInt8(ascii: "{"), UInt8(ascii: "["):
                    depth += 1
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    depth -= 1
                    if depth == 0 {
                        index += 1
                        return true
                    }
                default:
                    break
                }
                index += 1
                skipToStructure()
            }
            return false
        default:
            // A number or literal: runs to the next delimiter.
            while index < bytes.count {
                let byte = bytes[index]
                if byte == UInt8(ascii: ",") || byte == UInt8(ascii: "}") || byte == UInt8(ascii: "]")
                    || byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D {
                    break
                }
                index += 1
            }
            return true
        }
    }

    /// Decodes a quoted JSON string; escapes go through `JSONDecoder` (rare in server frames).
    static func decodeString(_ slice: UnsafeRawBufferPointer) -> String? {
        guard slice.count >= 2, slice[0] == UInt8(ascii: "\""), slice[slice.count - 1] == UInt8(ascii: "\"") else { return nil }
        let inner = UnsafeRawBufferPointer(rebasing: slice[1..<(slice.count - 1)])
        if !inner.contains(UInt8(ascii: "\\")) {
            return String(decoding: inner, as: UTF8.self)
        }
        return try? JSONDecoder().decode(String.self, from: Data(slice))
    }

    /// Decodes an integer written without fraction or exponent; nil on anything else or overflow.
    static func decodeInt(_ slice: UnsafeRawBufferPointer) -> Int? {
        var index = 0
        var negative = false
        if slice.count > 0, slice[0] == UInt8(ascii: "-") {
            negative = true
            index = 1
        }
        guard index < slice.count else { return nil }
        var value = 0
        while index < slice.count {
            let byte = slice[index]
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            let (times, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times.addingReportingOverflow(Int(byte - UInt8(ascii: "0")))
            guard !overflow1, !overflow2 else { return nil }
            value = sum
            index += 1
        }
        return negative ? -value : value
    }

    /// `true` or `false`; nil for anything else.
    static func decodeBool(_ slice: UnsafeRawBufferPointer) -> Bool? {
        if slice.elementsEqual("true".utf8) { return true }
        if slice.elementsEqual("false".utf8) { return false }
        return nil
    }
}

/// A top-level key of a frame: where it is, and its bytes packed into one integer when it is
/// short and plain (every key the client looks up is), so lookups compare integers.
struct FieldKey {
    /// The key with its quotes.
    let quoted: Range<Int>
    /// Up to 7 bytes and the length in the top byte; nil for longer keys or keys with escapes.
    let packed: UInt64?

    init(quoted: Range<Int>, packed: UInt64?) {
        self.quoted = quoted
        self.packed = packed
    }

    init(bytes: UnsafeRawBufferPointer, quoted: Range<Int>) {
        self.quoted = quoted
        // `packed(_:)` of the contents, in one loop that also looks for a backslash.
        let start = quoted.lowerBound + 1
        let count = quoted.count - 2
        guard count <= 7 else {
            packed = nil
            return
        }
        var value = UInt64(count) << 56
        for offset in 0..<count {
            let byte = bytes[start + offset]
            if byte == UInt8(ascii: "\\") {
                packed = nil
                return
            }
            value |= UInt64(byte) << (UInt64(offset) * 8)
        }
        packed = value
    }

    /// The packed form of a plain key's bytes; nil when longer than 7 bytes.
    static func packed<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> UInt64? {
        guard bytes.count <= 7 else { return nil }
        var value = UInt64(bytes.count) << 56
        var shift: UInt64 = 0
        for byte in bytes {
            value |= UInt64(byte) << shift
            shift += 8
        }
        return value
    }
}
