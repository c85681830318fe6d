/// One JSON value read as a primitive (or handed on to a nested `Decodable`).
struct PayloadSingleValueContainer: SingleValueDecodingContainer {
    let decoder: PayloadDecoder
    var codingPath: [any CodingKey] { decoder.codingPath }

    /// The decoder, refusing `null` for a non-optional `type`.
    private func present(_ type: Any.Type) throws -> PayloadDecoder {
        if decoder.decodeNil() {
            throw DecodingError.valueNotFound(type, DecodingError.Context(codingPath: codingPath, debugDescription: "null for \(type)"))
        }
        return decoder
    }

    func decodeNil() -> Bool { decoder.decodeNil() }
    func decode(_ type: Bool.Type) throws -> Bool { try present(type).decodeBool() }
    func decode(_ type: String.Type) throws -> String { try present(type).decodeString() }
    func decode(_ type: Double.Type) throws -> Double { try present(type).decodeDouble() }
    func decode(_ type: Float.Type) throws -> Float { throw PayloadDecoder.corrupted(codingPath, "Float: decoded by JSONDecoder") }
    func decode(_ type: Int.Type) throws -> Int { try present(type).decodeInt() }
    func decode(_ type: Int8.Type) throws -> Int8 { try present(type).decodeInteger(type) }
    func decode(_ type: Int16.Type) throws -> Int16 { try present(type).decodeInteger(type) }
    func decode(_ type: Int32.Type) throws -> Int32 { try present(type).decodeInteger(type) }
    func decode(_ type: Int64.Type) throws -> Int64 { try present(type).decodeInteger(type) }
    func decode(_ type: UInt.Type) throws -> UInt { try present(type).decodeInteger(type) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try present(type).decodeInteger(type) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try present(type).decodeInteger(type) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try present(type).decodeInteger(type) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try present(type).decodeInteger(type) }
    func decode<T: Decodable>(_ type: T.Type) throws -> T { try decoder.decodeValue(type) }
}
