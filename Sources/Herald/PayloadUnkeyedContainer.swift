import HeraldWire

/// The elements of one JSON array, found in one pass, read in order.
struct PayloadUnkeyedContainer: UnkeyedDecodingContainer {
    let decoder: PayloadDecoder
    private let elements: [Range<Int>]
    private(set) var currentIndex = 0
    let codingPath: [any CodingKey]
    var count: Int? { elements.count }
    var isAtEnd: Bool { currentIndex >= elements.count }

    /// Splits the array into elements, each validated as it is skipped.
    /// - Throws: `typeMismatch` when the value is not an array, `dataCorrupted` when malformed.
    init(decoder: PayloadDecoder) throws {
        self.decoder = decoder
        let path = decoder.codingPath
        codingPath = path
        guard decoder.firstByte == UInt8(ascii: "[") else { throw decoder.mismatch([Any].self) }
        elements = try decoder.source.bytes.withUnsafeBytes { raw throws -> [Range<Int>] in
            let bytes = UnsafeRawBufferPointer(rebasing: raw[..<decoder.end])
            var elements: [Range<Int>] = []
            var i = JSONTokens.skipWhitespace(bytes, from: decoder.start + 1)
            if i < bytes.count, bytes[i] == UInt8(ascii: "]") {
                guard i + 1 == bytes.count else { throw PayloadDecoder.corrupted(path, "bytes after the array") }
                return elements
            }
            while true {
                guard let value = JSONTokens.value(bytes, at: i) else { throw PayloadDecoder.corrupted(path, "malformed element") }
                elements.append(i..<value.end)
                i = JSONTokens.skipWhitespace(bytes, from: value.end)
                guard i < bytes.count else { throw PayloadDecoder.corrupted(path, "unterminated array") }
                if bytes[i] == UInt8(ascii: "]") {
                    guard i + 1 == bytes.count else { throw PayloadDecoder.corrupted(path, "bytes after the array") }
                    return elements
                }
                guard bytes[i] == UInt8(ascii: ",") else { throw PayloadDecoder.corrupted(path, "expected ',' or ']'") }
                i = JSONTokens.skipWhitespace(bytes, from: i + 1)
            }
        }
    }

    /// The next element's decoder, moving past it.
    /// - Throws: `valueNotFound` at the end; for a non-optional `type`, also for `null`.
    private mutating func next(_ type: Any.Type, allowNull: Bool = false) throws -> PayloadDecoder {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(type, DecodingError.Context(codingPath: codingPath, debugDescription: "unkeyed container is at end"))
        }
        let element = decoder.child(elements[currentIndex], parentPath: codingPath, key: PayloadIndexKey(currentIndex))
        if !allowNull, element.decodeNil() {
            throw DecodingError.valueNotFound(type, DecodingError.Context(codingPath: element.codingPath, debugDescription: "null for \(type)"))
        }
        currentIndex += 1
        return element
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd else { return false }
        let isNull = decoder.child(elements[currentIndex], parentPath: codingPath, key: PayloadIndexKey(currentIndex)).decodeNil()
        if isNull { currentIndex += 1 }
        return isNull
    }

    mutating func decode(_ type: Bool.Type) throws -> Bool { try next(type).decodeBool() }
    mutating func decode(_ type: String.Type) throws -> String { try next(type).decodeString() }
    mutating func decode(_ type: Double.Type) throws -> Double { try next(type).decodeDouble() }
    mutating func decode(_ type: Float.Type) throws -> Float { throw PayloadDecoder.corrupted(codingPath, "Float: decoded by JSONDecoder") }
    mutating func decode(_ type: Int.Type) throws -> Int { try next(type).decodeInt() }
    mutating func decode(_ type: Int8.Type) throws -> Int8 { try next(type).decodeInteger(type) }
    mutating func decode(_ type: Int16.Type) throws -> Int16 { try next(type).decodeInteger(type) }
    mutating func decode(_ type: Int32.Type) throws -> Int32 { try next(type).decodeInteger(type) }
    mutating func decode(_ type: Int64.Type) throws -> Int64 { try next(type).decodeInteger(type) }
    mutating func decode(_ type: UInt.Type) throws -> UInt { try next(type).decodeInteger(type) }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try next(type).decodeInteger(type) }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try next(type).decodeInteger(type) }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try next(type).decodeInteger(type) }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try next(type).decodeInteger(type) }
    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { try next(type, allowNull: true).decodeValue(type) }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        try next(type, allowNull: true).container(keyedBy: type)
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        try next([Any].self, allowNull: true).unkeyedContainer()
    }

    mutating func superDecoder() throws -> any Decoder { try next(Any.self, allowNull: true) }
}
