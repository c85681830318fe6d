import HeraldWire

/// One member of a JSON object: its key's contents (between the quotes) and its value's range.
struct PayloadMember {
    let key: Range<Int>
    let keyHasEscapes: Bool
    let value: Range<Int>
}

/// The members of one JSON object, found in one pass, looked up by name.
///
/// Not generic (unlike the container over it): generic code reached through
/// `KeyedDecodingContainer`'s box is not specialized, and looked up type metadata per call.
/// A class: that unspecialized code copied the whole struct (decoder, path, members: five
/// retains and releases) on every field access; a reference is one.
final class PayloadObject {
    typealias Member = PayloadMember

    let decoder: PayloadDecoder
    /// The decoder's bytes, held directly: reading a field's range does not copy `decoder`.
    let source: PayloadSource
    let members: [Member]
    /// Computed once: every member's decoder shares it as its parent path.
    let codingPath: [any CodingKey]

    /// Splits the object into members; each value is validated as it is skipped.
    /// - Throws: `typeMismatch` when the value is not an object, `dataCorrupted` when malformed.
    init(decoder: PayloadDecoder) throws {
        self.decoder = decoder
        source = decoder.source
        let path = decoder.codingPath
        codingPath = path
        guard decoder.firstByte == UInt8(ascii: "{") else { throw decoder.mismatch([String: Any].self) }
        members = try decoder.source.bytes.withUnsafeBytes { raw throws -> [PayloadMember] in
            let bytes = UnsafeRawBufferPointer(rebasing: raw[..<decoder.end])
            var members: [PayloadMember] = []
            var i = JSONTokens.skipWhitespace(bytes, from: decoder.start + 1)
            if i < bytes.count, bytes[i] == UInt8(ascii: "}") {
                guard i + 1 == bytes.count else { throw PayloadDecoder.corrupted(path, "bytes after the object") }
                return members
            }
            members.reserveCapacity(8)
            while true {
                let keyStart = i
                guard i < bytes.count, let key = JSONTokens.string(bytes, at: keyStart) else {
                    throw PayloadDecoder.corrupted(path, "expected a member name")
                }
                i = JSONTokens.skipWhitespace(bytes, from: key.end)
                guard i < bytes.count, bytes[i] == UInt8(ascii: ":") else { throw PayloadDecoder.corrupted(path, "expected ':'") }
                let valueStart = JSONTokens.skipWhitespace(bytes, from: i + 1)
                guard let value = JSONTokens.value(bytes, at: valueStart) else {
                    throw PayloadDecoder.corrupted(path, "malformed member value")
                }
                members.append(PayloadMember(key: (keyStart + 1)..<(key.end - 1), keyHasEscapes: key.hasEscapes, value: valueStart..<value.end))
                i = JSONTokens.skipWhitespace(bytes, from: value.end)
                guard i < bytes.count else { throw PayloadDecoder.corrupted(path, "unterminated object") }
                if bytes[i] == UInt8(ascii: "}") {
                    guard i + 1 == bytes.count else { throw PayloadDecoder.corrupted(path, "bytes after the object") }
                    return members
                }
                guard bytes[i] == UInt8(ascii: ",") else { throw PayloadDecoder.corrupted(path, "expected ',' or '}'") }
                i = JSONTokens.skipWhitespace(bytes, from: i + 1)
            }
        }
    }

    /// The member named `name` (the last one, if the name repeats: as `JSONDecoder`).
    func member(named name: String) -> Member? {
        var name = name
        return name.withUTF8 { wanted -> Member? in
            source.bytes.withUnsafeBytes { raw -> Member? in
                // Backwards without `reversed()` (its generic wrapper costs a metadata lookup per call).
                var index = members.count
                while index > 0 {
                    index -= 1
                    let member = members[index]
                    if member.keyHasEscapes {
                        if JSONTokens.decodeString(raw, from: member.key.lowerBound, to: member.key.upperBound).utf8.elementsEqual(wanted) {
                            return member
                        }
                    } else if member.key.count == wanted.count, Self.sameBytes(raw, from: member.key.lowerBound, wanted) {
                        return member
                    }
                }
                return nil
            }
        }
    }

    /// Whether `bytes[start...]` begins with `wanted` (keys are short: a plain loop).
    private static func sameBytes(_ bytes: UnsafeRawBufferPointer, from start: Int, _ wanted: UnsafeBufferPointer<UInt8>) -> Bool {
        for index in 0..<wanted.count where bytes[start + index] != wanted[index] { return false }
        return true
    }

    func name(of member: Member) -> String {
        source.bytes.withUnsafeBytes { raw in
            member.keyHasEscapes ? JSONTokens.decodeString(raw, from: member.key.lowerBound, to: member.key.upperBound)
                                 : String(decoding: UnsafeRawBufferPointer(rebasing: raw[member.key]), as: UTF8.self)
        }
    }
}

/// A JSON object read by key on demand (`PayloadObject` does the work).
struct PayloadKeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let object: PayloadObject
    var decoder: PayloadDecoder { object.decoder }
    var codingPath: [any CodingKey] { object.codingPath }

    /// Splits the object into members.
    /// - Throws: `typeMismatch` when the value is not an object, `dataCorrupted` when malformed.
    init(decoder: PayloadDecoder) throws {
        object = try PayloadObject(decoder: decoder)
    }

    /// Every key, as `Key`s (keys that `Key` does not know are left out).
    var allKeys: [Key] {
        object.members.compactMap { Key(stringValue: object.name(of: $0)) }
    }

    func contains(_ key: Key) -> Bool { object.member(named: key.stringValue) != nil }

    /// The range of `key`'s value.
    /// - Throws: `keyNotFound`.
    private func range(_ key: Key) throws -> Range<Int> {
        guard let member = object.member(named: key.stringValue) else {
            throw DecodingError.keyNotFound(key, DecodingError.Context(codingPath: codingPath, debugDescription: "no value for \(key.stringValue)"))
        }
        return member.value
    }

    /// The decoder of `key`'s value.
    /// - Throws: `keyNotFound`.
    private func value(_ key: Key) throws -> PayloadDecoder {
        decoder.child(try range(key), parentPath: codingPath, key: key)
    }

    /// The range of `key`'s value, refusing `null` for a non-optional.
    ///
    /// Why a range and not a child decoder: the primitive fields below parse it in place
    /// (`PayloadSource`), and build the coding path only when they throw.
    /// - Throws: `keyNotFound`, or `valueNotFound` for `null`.
    private func present(_ key: Key, _ type: Any.Type) throws -> Range<Int> {
        let value = try range(key)
        if object.source.isNull(value) {
            throw DecodingError.valueNotFound(type, DecodingError.Context(codingPath: codingPath + [key], debugDescription: "null for \(type)"))
        }
        return value
    }

    /// Any fixed-width integer field.
    private func integer<Integer: FixedWidthInteger>(_ type: Integer.Type, _ key: Key) throws -> Integer {
        try object.source.integer(type, present(key, type), path: codingPath + [key])
    }

    func decodeNil(forKey key: Key) throws -> Bool { object.source.isNull(try range(key)) }
    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try object.source.bool(present(key, type), path: codingPath + [key]) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try object.source.string(present(key, type), path: codingPath + [key]) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try object.source.double(present(key, type), path: codingPath + [key]) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try object.source.int(present(key, type), path: codingPath + [key]) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try integer(type, key) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try integer(type, key) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try integer(type, key) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try integer(type, key) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try integer(type, key) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try integer(type, key) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try integer(type, key) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try integer(type, key) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try integer(type, key) }

    func decode(_ type: Float.Type, forKey key: Key) throws -> Float {
        // Parsing a Float through a Double could round twice: leave it to JSONDecoder.
        throw PayloadDecoder.corrupted(codingPath, "Float: decoded by JSONDecoder")
    }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        // `null` is for `T` to judge (an Optional accepts it).
        try value(key).decodeValue(type)
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        try value(key).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try value(key).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder {
        guard let member = object.member(named: "super") else {
            throw PayloadDecoder.corrupted(codingPath, "no super")
        }
        return decoder.child(member.value, key: PayloadIndexKey(0))
    }

    func superDecoder(forKey key: Key) throws -> any Decoder { try value(key) }
}
