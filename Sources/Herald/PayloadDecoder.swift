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
        if Value.self == Int.self, let number = try decodeInteger(Int.self) as? Value { return number }
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

    // MARK: Primitives

    func decodeNil() -> Bool { firstByte == UInt8(ascii: "n") }

    func decodeBool() throws -> Bool {
        switch firstByte {
        case UInt8(ascii: "t") where end - start == 4: return true
        case UInt8(ascii: "f") where end - start == 5: return false
        default: throw mismatch(Bool.self)
        }
    }

    func decodeString() throws -> String {
        guard firstByte == UInt8(ascii: "\""), end - start >= 2 else { throw mismatch(String.self) }
        return source.bytes.withUnsafeBytes { raw in
            let contents = UnsafeRawBufferPointer(rebasing: raw[(start + 1)..<(end - 1)])
            if contents.firstIndex(of: UInt8(ascii: "\\")) == nil { return String(decoding: contents, as: UTF8.self) }
            return JSONTokens.decodeString(raw, from: start + 1, to: end - 1)
        }
    }

    /// An integer written as one: optional `-`, digits, nothing else, in range.
    func decodeInteger<Integer: FixedWidthInteger>(_ type: Integer.Type) throws -> Integer {
        try source.bytes.withUnsafeBytes { raw throws -> Integer in
            var i = start
            let negative = raw[i] == UInt8(ascii: "-")
            if negative { i += 1 }
            guard i < end else { throw mismatch(Integer.self) }
            var value: Integer = 0
            while i < end {
                let digit = raw[i] &- UInt8(ascii: "0")
                guard digit < 10 else { throw mismatch(Integer.self) }
                let (times, overflow1) = value.multipliedReportingOverflow(by: 10)
                let (next, overflow2) = negative ? times.subtractingReportingOverflow(Integer(digit))
                                                 : times.addingReportingOverflow(Integer(digit))
                guard !overflow1, !overflow2 else { throw Self.corrupted(codingPath, "number does not fit in \(Integer.self)") }
                value = next
                i += 1
            }
            return value
        }
    }

    /// A `Double`: exact fast path for up to 15 significant digits and a short fraction
    /// (both operands exact, so the one division rounds correctly); else the standard parser.
    func decodeDouble() throws -> Double {
        let fast = source.bytes.withUnsafeBytes { raw -> Double? in
            var i = start
            let negative = raw[i] == UInt8(ascii: "-")
            if negative { i += 1 }
            var mantissa: UInt64 = 0
            var digits = 0
            var fraction = 0
            var seenDot = false
            while i < end {
                let byte = raw[i]
                if byte == UInt8(ascii: ".") && !seenDot {
                    seenDot = true
                } else {
                    let digit = byte &- UInt8(ascii: "0")
                    guard digit < 10 else { return nil }
                    mantissa = mantissa &* 10 &+ UInt64(digit)
                    digits += 1
                    if seenDot { fraction += 1 }
                }
                i += 1
            }
            guard digits > 0, digits <= 15, fraction < Self.powersOfTen.count else { return nil }
            let value = Double(mantissa) / Self.powersOfTen[fraction]
            return negative ? -value : value
        }
        if let fast { return fast }
        guard let first = Optional(firstByte), first == UInt8(ascii: "-") || (first >= UInt8(ascii: "0") && first <= UInt8(ascii: "9")),
              let value = Double(numberText()) else { throw mismatch(Double.self) }
        return value
    }

    /// The value's bytes as text (numbers for the slow paths).
    func numberText() -> String {
        String(decoding: source.bytes[start..<end], as: UTF8.self)
    }

    static let powersOfTen: [Double] = (0...22).map { exponent in
        var value = 1.0
        for _ in 0..<exponent { value *= 10 }
        return value
    }

    // MARK: Errors

    func mismatch(_ type: Any.Type) -> DecodingError {
        DecodingError.typeMismatch(type, DecodingError.Context(codingPath: codingPath, debugDescription: "expected \(type)"))
    }

    static func corrupted(_ path: [any CodingKey], _ why: String) -> DecodingError {
        DecodingError.dataCorrupted(DecodingError.Context(codingPath: path, debugDescription: why))
    }
}

/// The bytes a `PayloadDecoder` and its containers read (one allocation per payload).
final class PayloadSource {
    let bytes: [UInt8]

    init(_ bytes: [UInt8]) {
        self.bytes = bytes
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
