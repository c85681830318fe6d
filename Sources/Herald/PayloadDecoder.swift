import Foundation
import HeraldWire

/// A `Decoder` that reads a JSON value straight from its bytes with `HeraldWire`'s lexer.
///
/// Why: Foundation's `JSONDecoder` builds a whole value tree (and a `Data`) per payload, which
/// made typed subscriptions the client's bottleneck (issue 17: ~50k events/s against ~500k/s
/// delivered). This decoder walks the bytes on demand: an object is split into members once
/// (key ranges and value ranges), and each field is parsed from its range when asked for.
/// Keys are compared as bytes, strings without escapes are made in one step, and numbers
/// that fit take a fast exact path.
///
/// It is strict where `JSONDecoder` is strict, and for anything it does not handle the same
/// way itself (an integer written as `1.0` or `1e2`, a `Float`, a malformed payload) it gives
/// up, and `RawJSON.decode` runs `JSONDecoder` instead, so results and error messages stay
/// Foundation's. `Data` is base64 text, `URL` a string and `Decimal` a number, as with
/// `JSONDecoder`'s default strategies; `Date` uses its own `Codable` (seconds since 2001),
/// which is `JSONDecoder`'s default too.
struct PayloadDecoder: Decoder {
    let source: PayloadSource
    /// The value's first byte.
    let start: Int
    /// Just past the value (for the top level: past its last non-whitespace byte).
    let end: Int
    /// The path of the container holding this value (shared, not copied per value).
    let parentPath: [any CodingKey]
    /// This value's key in that container; nil at the top level.
    let key: (any CodingKey)?
    /// Built only when asked for (errors, nested containers), not per decoded field.
    var codingPath: [any CodingKey] { key.map { parentPath + [$0] } ?? parentPath }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    /// Decodes `type` from a complete JSON text.
    /// - Parameter bytes: one JSON value, optionally surrounded by whitespace.
    /// - Returns: the value.
    /// - Throws: a `DecodingError` (the caller then asks `JSONDecoder`).
    static func decode<Value: Decodable>(_ type: Value.Type, from bytes: [UInt8]) throws -> Value {
        let source = PayloadSource(bytes)
        let (start, end) = bytes.withUnsafeBytes { raw -> (Int, Int) in
            var end = raw.count
            while end > 0, raw[end - 1] == 0x20 || raw[end - 1] == 0x0A || raw[end - 1] == 0x0D || raw[end - 1] == 0x09 { end -= 1 }
            return (JSONTokens.skipWhitespace(raw, from: 0), end)
        }
        guard start < end else { throw PayloadDecoder.corrupted([], "empty payload") }
        // Containers check their own closing byte; anything else is validated whole here.
        if bytes[start] != UInt8(ascii: "{"), bytes[start] != UInt8(ascii: "[") {
            let scanned = bytes.withUnsafeBytes { JSONTokens.value($0, at: start) }
            guard scanned?.end == end else { throw PayloadDecoder.corrupted([], "malformed payload") }
        }
        return try PayloadDecoder(source: source, start: start, end: end, parentPath: [], key: nil).decodeValue(Value.self)
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        KeyedDecodingContainer(try PayloadKeyedContainer<Key>(decoder: self))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        try PayloadUnkeyedContainer(decoder: self)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        PayloadSingleValueContainer(decoder: self)
    }

    /// The decoder of a member or element at `range`, one coding-path step down.
    func child(_ range: Range<Int>, key: any CodingKey) -> PayloadDecoder {
        child(range, parentPath: codingPath, key: key)
    }

    /// The same, with the parent's path already built (a container builds it once).
    func child(_ range: Range<Int>, parentPath: [any CodingKey], key: any CodingKey) -> PayloadDecoder {
        PayloadDecoder(source: source, start: range.lowerBound, end: range.upperBound, parentPath: parentPath, key: key)
    }

    /// The first byte of the value.
    var firstByte: UInt8 { source.bytes[start] }

    /// Decodes any `Decodable`, with `JSONDecoder`'s default handling of Foundation types.
    func decodeValue<Value: Decodable>(_ type: Value.Type) throws -> Value {
        if Value.self == String.self, let text = try decodeString() as? Value { return text }
        if Value.self == Int.self, let number = try decodeInt() as? Value { return number }
        if Value.self == Double.self, let number = try decodeDouble() as? Value { return number }
        if Value.self == Bool.self, let flag = try decodeBool() as? Value { return flag }
        if Value.self == Data.self {
            guard let data = Data(base64Encoded: try decodeString()) as? Value else {
                throw Self.corrupted(codingPath, "invalid base64 for Data")
            }
            return data
        }
        if Value.self == URL.self {
            guard let url = URL(string: try decodeString()) as? Value else { throw Self.corrupted(codingPath, "invalid URL") }
            return url
        }
        if Value.self == Decimal.self {
            guard let decimal = Decimal(string: numberText()) as? Value else { throw Self.corrupted(codingPath, "invalid Decimal") }
            return decimal
        }
        return try Value(from: self)
    }

    // MARK: Primitives (parsed by `PayloadSource`; the coding path is built only on error)

    /// The value's range in the source.
    var range: Range<Int> { start..<end }

    func decodeNil() -> Bool { source.isNull(range) }
    func decodeBool() throws -> Bool { try source.bool(range, path: codingPath) }
    func decodeString() throws -> String { try source.string(range, path: codingPath) }

    /// An integer written as one: optional `-`, digits, nothing else, in range.
    func decodeInteger<Integer: FixedWidthInteger>(_ type: Integer.Type) throws -> Integer {
        try source.integer(type, range, path: codingPath)
    }

    func decodeInt() throws -> Int { try source.int(range, path: codingPath) }

    func decodeDouble() throws -> Double { try source.double(range, path: codingPath) }

    /// The value's bytes as text (numbers for the slow paths).
    func numberText() -> String { source.text(range) }

    // MARK: Errors

    func mismatch(_ type: Any.Type) -> DecodingError { PayloadSource.mismatch(type, codingPath) }

    static func corrupted(_ path: [any CodingKey], _ why: String) -> DecodingError {
        DecodingError.dataCorrupted(DecodingError.Context(codingPath: path, debugDescription: why))
    }
}

/// A coding key for array positions in coding paths.
struct PayloadIndexKey: CodingKey {
    let intValue: Int?
    var stringValue: String { "Index \(intValue ?? 0)" }

    init(_ index: Int) { intValue = index }
    init?(stringValue: String) { nil }
    init?(intValue: Int) { self.intValue = intValue }
}
