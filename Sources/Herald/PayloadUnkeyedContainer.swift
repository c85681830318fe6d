import HeraldWire

/// The elements of one JSON array, found in one pass, read in order.
struct PayloadUnkeyedContainer: UnkeyedDecodingContainer {
    let decoder: PayloadDecoder
    private let elements: [Range<Int>]
    private(set) var currentIndex = 0
    /// Built when asked for (errors, nested values), not per container.
    var codingPath: [any CodingKey] { decoder.codingPath }
    var count: Int? { elements.count }
    var isAtEnd: Bool { currentIndex >= elements.count }

    /// Splits the array into elements, each validated as it is skipped.
    /// - Throws: `typeMismatch` when the value is not an array, `dataCorrupted` when malformed.
    init(decoder: PayloadDecoder) throws {
        self.decoder = decoder
        guard decoder.firstByte == UInt8(ascii: "[") else { throw decoder.mismatch([Any].self) }
        elements = try decoder.source.bytes.withUnsafeBytes { raw throws -> [Range<Int>] in
            let bytes = UnsafeRawBufferPointer(rebasing: raw[..<decoder.end])
            var elements: [Range<Int>] = []
            var i = JSONTokens.skipWhitespace(bytes, from: decoder.start + 1)
            if i < bytes.count, bytes[i] == UInt8(ascii: "]") {
                guard i + 1 == bytes.count else { throw PayloadDecoder.corrupted(decoder.codingPath, "bytes after the array") }
                return elements
            }
            while true {
                guard let value = JSONTokens.value(bytes, at: i) else { throw PayloadDecoder.corrupted(decoder.codingPath, "malformed element") }
                elements.append(i..<value.end)
                i = JSONTokens.skipWhitespace(bytes, from: value.end)
                guard i < bytes.count else { throw PayloadDecoder.corrupted(decoder.codingPath, "unterminated array") }
                if bytes[i] == UInt8(ascii: "]") {
                    guard i + 1 == bytes.count else { throw PayloadDecoder.corrupted(decoder.codingPath, "bytes after the array") }
                    return elements
                }
                guard bytes[i] == UInt8(ascii: ",") else { throw PayloadDecoder.corrupted(decoder.codingPath, "expected ',' or ']'") }
                i = JSONTokens.skipWhitespace(bytes, from: i + 1)
            }
        }
    }

    /// The coding path of the element at `index`, for errors.
    private func path(_ index: Int) -> [any CodingKey] { PayloadPath.codingPath(decoder.path, appending: PayloadIndexKey(index)) }

    /// The next element's range, moving past it.
    ///
    /// Primitive elements are parsed from it in place (`PayloadSource`), with no child decoder.
    /// - Throws: `valueNotFound` at the end; for a non-optional `type`, also for `null`.
    private mutating func next(_ type: Any.Type, allowNull: Bool = false) throws -> (range: Range<Int>, index: Int) {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(type, DecodingError.Context(codingPath: codingPath, debugDescription: "unkeyed container is at end"))
        }
        let index = currentIndex
        let range = elements[index]
        if !allowNull, decoder.source.isNull(range) {
            throw DecodingError.valueNotFound(type, DecodingError.Context(codingPath: path(index), debugDescription: "null for \(type)"))
        }
        currentIndex += 1
        return (range, index)
    }

    /// The next element's decoder, moving past it (nested values; `null` is theirs to judge).
    private mutating func nextDecoder(_ type: Any.Type) throws -> PayloadDecoder {
        let (range, index) = try next(type, allowNull: true)
        return decoder.child(range, key: PayloadIndexKey(index))
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd else { return false }
        let isNull = decoder.source.isNull(elements[currentIndex])
        if isNull { currentIndex += 1 }
        return isNull
    }

    /// The next element as a fixed-width integer.
    private mutating func integer<Integer: FixedWidthInteger>(_ type: Integer.Type) throws -> Integer {
        let (range, index) = try next(type)
        return try decoder.source.integer(type, range, path: path(index))
    }

    mutating func decode(_ type: Bool.Type) throws -> Bool {
        let (range, index) = try next(type)
        return try decoder.source.bool(range, path: path(index))
    }

    mutating func decode(_ type: String.Type) throws -> String {
        let (range, index) = try next(type)
        return try decoder.source.string(range, path: path(index))
    }

    mutating func decode(_ type: Double.Type) throws -> Double {
        let (range, index) = try next(type)
        return try decoder.source.double(range, path: path(index))
    }

    mutating func decode(_ type: Float.Type) throws -> Float { throw PayloadDecoder.corrupted(codingPath, "Float: decoded by JSONDecoder") }

    mutating func decode(_ type: Int.Type) throws -> Int {
        let (range, index) = try next(type)
        return try decoder.source.int(range, path: path(index))
    }

    mutating func decode(_ type: Int8.Type) throws -> Int8 { try integer(type) }
    mutating func decode(_ type: Int16.Type) throws -> Int16 { try integer(type) }
    mutating func decode(_ type: Int32.Type) throws -> Int32 { try integer(type) }
    mutating func decode(_ type: Int64.Type) throws -> Int64 { try integer(type) }
    mutating func decode(_ type: UInt.Type) throws -> UInt { try integer(type) }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try integer(type) }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try integer(type) }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try integer(type) }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try integer(type) }
    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { try nextDecoder(type).decodeValue(type) }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        try nextDecoder(type).container(keyedBy: type)
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        try nextDecoder([Any].self).unkeyedContainer()
    }

    mutating func superDecoder() throws -> any Decoder { try nextDecoder(Any.self) }
}
