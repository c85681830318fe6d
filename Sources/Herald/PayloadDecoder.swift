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
///
/// Three words (bytes, packed range, path): a value of at most three words is stored inside the
/// `any Decoder` existential that `init(from:)` receives, so handing the decoder to the
/// event's `init(from:)` allocates nothing (at nine words it was a heap box per event).
struct PayloadDecoder: Decoder {
    let source: PayloadSource
    /// The value's range, packed: `decode` declines payloads of 4 GiB or more.
    private let span: PayloadSpan
    /// This value's place in the payload (nil at the top level); the coding path is built
    /// from it only when asked for (errors, `codingPath`), never per decoded field.
    let path: PayloadPath?

    /// The value's first byte.
    var start: Int { Int(span.start) }
    /// Just past the value (for the top level: past its last non-whitespace byte).
    var end: Int { Int(span.end) }
    var codingPath: [any CodingKey] { path?.codingPath ?? [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    init(source: PayloadSource, range: Range<Int>, path: PayloadPath?) {
        self.source = source
        span = PayloadSpan(range)
        self.path = path
    }

    /// Decodes `type` from a complete JSON text.
    /// - Parameter bytes: one JSON value, optionally surrounded by whitespace.
    /// - Returns: the value.
    /// - Throws: a `DecodingError` (the caller then asks `JSONDecoder`).
    static func decode<Value: Decodable>(_ type: Value.Type, from bytes: [UInt8]) throws -> Value {
        guard PayloadSpan.fits(bytes.count) else { throw PayloadDecoder.corrupted([], "payload of 4 GiB or more") }
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
        return try PayloadDecoder(source: source, range: start..<end, path: nil).decodeValue(Value.self)
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
        PayloadDecoder(source: source, range: range, path: PayloadPath(parent: path, key: key))
    }

    /// The first byte of the value.
    var firstByte: UInt8 { source.bytes[start] }

    /// Decodes any `Decodable`, with `JSONDecoder`'s default handling of Foundation types.
    func decodeValue<Value: Decodable>(_ type: Value.Type) throws -> Value {
        // Structs (the usual payload) go straight to their `init(from:)`; the primitive
        // checks live apart because their casts need `Optional<Value>`'s metadata, a runtime
        // cache lookup per call that every struct payload paid when they were inline here.
        if Value.self == String.self || Value.self == Int.self || Value.self == Double.self || Value.self == Bool.self
            || Value.self == Data.self || Value.self == URL.self || Value.self == Decimal.self {
            return try foundationValue(Value.self)
        }
        return try Value(from: self)
    }

    /// The primitives and Foundation types `decodeValue` parses itself (any other type goes
    /// to its own `init(from:)`).
    @inline(never)
    private func foundationValue<Value: Decodable>(_ type: Value.Type) throws -> Value {
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

/// A value's range in its payload as two 32-bit offsets, so `PayloadDecoder` fits in three words.
struct PayloadSpan {
    /// Whether offsets into a payload of `count` bytes fit.
    static func fits(_ count: Int) -> Bool { UInt64(count) <= UInt64(UInt32.max) }

    let start: UInt32
    let end: UInt32

    /// Packs `range`; the payload's size was checked with `fits` (`PayloadDecoder.decode`).
    init(_ range: Range<Int>) {
        start = UInt32(truncatingIfNeeded: range.lowerBound)
        end = UInt32(truncatingIfNeeded: range.upperBound)
    }
}

/// Where a nested value sits: its container's place and its key, linked up to the top level.
///
/// A class shared by every value below it, so a child decoder costs one small object (only for
/// nested `Decodable` values; primitive fields never build one) and the coding path, an array,
/// is built only when something asks for it (an error message, `codingPath`).
final class PayloadPath {
    let parent: PayloadPath?
    let key: any CodingKey

    init(parent: PayloadPath?, key: any CodingKey) {
        self.parent = parent
        self.key = key
    }

    /// The keys from the top level down to this value.
    var codingPath: [any CodingKey] {
        var keys: [any CodingKey] = []
        var node: PayloadPath? = self
        while let current = node {
            keys.append(current.key)
            node = current.parent
        }
        return keys.reversed()
    }

    /// The path of `key` below `path` (nil: the top level), as an array.
    static func codingPath(_ path: PayloadPath?, appending key: any CodingKey) -> [any CodingKey] {
        (path?.codingPath ?? []) + [key]
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
