import HeraldWire

/// One member of a JSON object: where its key's contents (between the quotes) and its value
/// are, and the key's first bytes packed for lookups.
///
/// 32-bit offsets (`PayloadDecoder.decode` declines payloads that do not fit) keep a member
/// at 32 bytes.
struct PayloadMember {
    let keyStart: UInt32
    let keyEnd: UInt32
    let valueStart: UInt32
    let valueEnd: UInt32
    /// Up to the key's first 8 bytes, the first in the low byte (`prefix(_:count:)`).
    let prefix: UInt64
    let keyHasEscapes: Bool

    init(key: Range<Int>, keyHasEscapes: Bool, value: Range<Int>, in bytes: UnsafeRawBufferPointer) {
        keyStart = UInt32(truncatingIfNeeded: key.lowerBound)
        keyEnd = UInt32(truncatingIfNeeded: key.upperBound)
        valueStart = UInt32(truncatingIfNeeded: value.lowerBound)
        valueEnd = UInt32(truncatingIfNeeded: value.upperBound)
        self.keyHasEscapes = keyHasEscapes
        prefix = Self.prefix(bytes, from: key.lowerBound, count: key.count)
    }

    var key: Range<Int> { Int(keyStart)..<Int(keyEnd) }
    var value: Range<Int> { Int(valueStart)..<Int(valueEnd) }

    /// The first `min(count, 8)` bytes at `start`, the first in the low byte, zero above.
    static func prefix(_ bytes: UnsafeRawBufferPointer, from start: Int, count: Int) -> UInt64 {
        if start + 8 <= bytes.count {
            let word = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: start, as: UInt64.self))
            return count >= 8 ? word : word & ((1 << (UInt64(count) * 8)) - 1)
        }
        var word: UInt64 = 0
        for index in 0..<min(count, 8) { word |= UInt64(bytes[start + index]) << (UInt64(index) * 8) }
        return word
    }
}

/// What a `PayloadObject` knows besides its members.
struct PayloadObjectHeader {
    let source: PayloadSource
    /// The object's place in the payload (nil: the top level).
    let path: PayloadPath?
    /// The object's range.
    let span: PayloadSpan
    let count: Int
}

/// The members of one JSON object, found in one pass, looked up by name.
///
/// Not generic (unlike the container over it): generic code reached through
/// `KeyedDecodingContainer`'s box is not specialized, and looked up type metadata per call.
/// A class: that unspecialized code copied a struct container whole on every field access.
/// A `ManagedBuffer` with the members stored in the object itself: one allocation per object
/// instead of an object and an array (the members are gathered on the stack first).
final class PayloadObject: ManagedBuffer<PayloadObjectHeader, PayloadMember> {
    typealias Member = PayloadMember

    /// How many members are gathered on the stack before spilling into an array.
    private static let stackMembers = 32

    /// Splits the object at `decoder` into members; each value is validated as it is skipped.
    /// - Throws: `typeMismatch` when the value is not an object, `dataCorrupted` when malformed.
    static func split(_ decoder: PayloadDecoder) throws -> PayloadObject {
        guard decoder.firstByte == UInt8(ascii: "{") else { throw decoder.mismatch([String: Any].self) }
        return try withUnsafeTemporaryAllocation(of: Member.self, capacity: stackMembers) { scratch throws -> PayloadObject in
            var count = 0
            var spill: [Member] = []
            try scan(decoder) { member in
                if count < scratch.count {
                    scratch.initializeElement(at: count, to: member)
                } else {
                    if spill.isEmpty { spill.append(contentsOf: scratch) }
                    spill.append(member)
                }
                count += 1
            }
            let header = PayloadObjectHeader(source: decoder.source, path: decoder.path, span: PayloadSpan(decoder.range), count: count)
            let object = unsafeDowncast(create(minimumCapacity: count) { _ in header }, to: PayloadObject.self)
            object.withUnsafeMutablePointerToElements { elements in
                if count <= scratch.count {
                    if let base = scratch.baseAddress { elements.initialize(from: base, count: count) }
                } else {
                    spill.withUnsafeBufferPointer { spilled in
                        if let base = spilled.baseAddress { elements.initialize(from: base, count: count) }
                    }
                }
            }
            return object
        }
    }

    /// Skips whitespace from `offset`; payloads rarely have any, so one comparison usually
    /// decides (a space, tab, CR or LF is at most 0x20).
    private static func skipSpace(_ bytes: UnsafeRawBufferPointer, from offset: Int) -> Int {
        if offset < bytes.count, bytes[offset] > 0x20 { return offset }
        return JSONTokens.skipWhitespace(bytes, from: offset)
    }

    /// Walks the object's members in order.
    private static func scan(_ decoder: PayloadDecoder, _ body: (Member) -> Void) throws {
        let path = decoder.path
        try decoder.source.bytes.withUnsafeBytes { raw throws in
            let bytes = UnsafeRawBufferPointer(rebasing: raw[..<decoder.end])
            var i = skipSpace(bytes, from: decoder.start + 1)
            if i < bytes.count, bytes[i] == UInt8(ascii: "}") {
                guard i + 1 == bytes.count else { throw PayloadDecoder.corrupted(path?.codingPath ?? [], "bytes after the object") }
                return
            }
            while true {
                let keyStart = i
                guard i < bytes.count, let key = PlainTokens.string(bytes, at: keyStart).map({ (end: $0, hasEscapes: false) })
                        ?? JSONTokens.string(bytes, at: keyStart) else {
                    throw PayloadDecoder.corrupted(path?.codingPath ?? [], "expected a member name")
                }
                i = skipSpace(bytes, from: key.end)
                guard i < bytes.count, bytes[i] == UInt8(ascii: ":") else {
                    throw PayloadDecoder.corrupted(path?.codingPath ?? [], "expected ':'")
                }
                let valueStart = skipSpace(bytes, from: i + 1)
                guard let valueEnd = PlainTokens.value(bytes, at: valueStart) ?? JSONTokens.value(bytes, at: valueStart)?.end else {
                    throw PayloadDecoder.corrupted(path?.codingPath ?? [], "malformed member value")
                }
                body(Member(key: (keyStart + 1)..<(key.end - 1), keyHasEscapes: key.hasEscapes, value: valueStart..<valueEnd, in: bytes))
                i = skipSpace(bytes, from: valueEnd)
                guard i < bytes.count else { throw PayloadDecoder.corrupted(path?.codingPath ?? [], "unterminated object") }
                if bytes[i] == UInt8(ascii: "}") {
                    guard i + 1 == bytes.count else { throw PayloadDecoder.corrupted(path?.codingPath ?? [], "bytes after the object") }
                    return
                }
                guard bytes[i] == UInt8(ascii: ",") else { throw PayloadDecoder.corrupted(path?.codingPath ?? [], "expected ',' or '}'") }
                i = skipSpace(bytes, from: i + 1)
            }
        }
    }

    // The header is read through its pointer: `ManagedBuffer.header` is a class property of
    // another module, and every access to it was checked for exclusivity at run time.

    /// The header, read in place.
    private var head: PayloadObjectHeader { withUnsafeMutablePointerToHeader { $0.pointee } }

    var source: PayloadSource { withUnsafeMutablePointerToHeader { $0.pointee.source } }
    var path: PayloadPath? { withUnsafeMutablePointerToHeader { $0.pointee.path } }

    /// The object's own decoder (for `superDecoder`).
    var decoder: PayloadDecoder {
        let head = self.head
        return PayloadDecoder(source: head.source, range: Int(head.span.start)..<Int(head.span.end), path: head.path)
    }

    /// The object's coding path, built when asked for (errors, `codingPath`).
    var codingPath: [any CodingKey] { path?.codingPath ?? [] }

    /// Every member, in wire order.
    var members: [Member] {
        withUnsafeMutablePointers { head, elements in Array(UnsafeBufferPointer(start: elements, count: head.pointee.count)) }
    }

    /// The member named `name` (the last one, if the name repeats: as `JSONDecoder`).
    func member(named name: String) -> Member? {
        var name = name
        return name.withUTF8 { wanted -> Member? in
            var wantedPrefix: UInt64 = 0
            for index in 0..<min(wanted.count, 8) { wantedPrefix |= UInt64(wanted[index]) << (UInt64(index) * 8) }
            return withUnsafeMutablePointers { head, members -> Member? in
                // Backwards, so a repeated name finds its last occurrence first.
                var index = head.pointee.count
                while index > 0 {
                    index -= 1
                    let member = members[index]
                    if member.keyHasEscapes {
                        let key = head.pointee.source.bytes.withUnsafeBytes {
                            JSONTokens.decodeString($0, from: Int(member.keyStart), to: Int(member.keyEnd))
                        }
                        if key.utf8.elementsEqual(wanted) { return member }
                    } else if member.prefix == wantedPrefix, Int(member.keyEnd &- member.keyStart) == wanted.count {
                        if wanted.count <= 8 { return member }
                        if head.pointee.source.bytes.withUnsafeBytes({ Self.sameBytes($0, from: Int(member.keyStart), wanted) }) { return member }
                    }
                }
                return nil
            }
        }
    }

    /// Whether `bytes[start...]` begins with `wanted` past their first 8 bytes (which the
    /// prefixes compared; keys are short: a plain loop).
    private static func sameBytes(_ bytes: UnsafeRawBufferPointer, from start: Int, _ wanted: UnsafeBufferPointer<UInt8>) -> Bool {
        for index in 8..<wanted.count where bytes[start + index] != wanted[index] { return false }
        return true
    }

    func name(of member: Member) -> String {
        source.bytes.withUnsafeBytes { raw in
            member.keyHasEscapes ? JSONTokens.decodeString(raw, from: Int(member.keyStart), to: Int(member.keyEnd))
                                 : String(decoding: UnsafeRawBufferPointer(rebasing: raw[member.key]), as: UTF8.self)
        }
    }
}

/// The tokens of a typical payload, scanned here instead of by `JSONTokens` (a call into
/// another module per token): ASCII strings without escapes, numbers, literals.
///
/// Each either gives exactly the end `JSONTokens` would give or nil, and nil sends the
/// token to `JSONTokens`, which decides (escapes, non-ASCII text, containers, malformed
/// input): what is accepted and rejected is the lexer's, as before.
enum PlainTokens {
    /// The end of the plain token at `offset`; nil when it is not one.
    static func value(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> Int? {
        guard offset < bytes.count else { return nil }
        switch bytes[offset] {
        case UInt8(ascii: "\""): return string(bytes, at: offset)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return number(bytes, at: offset)
        case UInt8(ascii: "t"): return literal(bytes, at: offset, 0x6575_7274, length: 4)  // "true"
        case UInt8(ascii: "f"): return literal(bytes, at: offset, 0x65_736C_6166, length: 5)  // "false"
        case UInt8(ascii: "n"): return literal(bytes, at: offset, 0x6C6C_756E, length: 4)  // "null"
        default: return nil
        }
    }

    /// The end of the string at `offset` when it is printable ASCII without escapes.
    static func string(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> Int? {
        guard offset < bytes.count, bytes[offset] == UInt8(ascii: "\"") else { return nil }
        var i = offset + 1
        while i + 8 <= bytes.count {
            let special = specialBytes(UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: i, as: UInt64.self)))
            if special == 0 {
                i += 8
                continue
            }
            i += special.trailingZeroBitCount >> 3
            return bytes[i] == UInt8(ascii: "\"") ? i + 1 : nil
        }
        while i < bytes.count {
            let byte = bytes[i]
            if byte == UInt8(ascii: "\"") { return i + 1 }
            if byte == UInt8(ascii: "\\") || byte < 0x20 || byte >= 0x80 { return nil }
            i += 1
        }
        return nil
    }

    /// The high bit of each byte lane of `word` holding a quote, a backslash, a byte below
    /// 0x20 or one of 0x80 and above (HeraldWire's string scanner's test): exact for the
    /// lowest such lane.
    private static func specialBytes(_ word: UInt64) -> UInt64 {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let quotes = word ^ (ones &* UInt64(UInt8(ascii: "\"")))
        let backslashes = word ^ (ones &* UInt64(UInt8(ascii: "\\")))
        let quoteHits = (quotes &- ones) & ~quotes
        let backslashHits = (backslashes &- ones) & ~backslashes
        let controlHits = (word &- ones &* 0x20) & ~word
        return (quoteHits | backslashHits | controlHits | word) & 0x8080_8080_8080_8080
    }

    /// The end of the number at `offset` (RFC 8259's grammar, as HeraldWire's lexer reads it).
    static func number(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> Int? {
        func isDigit(_ index: Int) -> Bool { index < bytes.count && bytes[index] &- UInt8(ascii: "0") < 10 }
        var i = offset
        if bytes[i] == UInt8(ascii: "-") { i += 1 }
        guard isDigit(i) else { return nil }
        if bytes[i] == UInt8(ascii: "0") {
            i += 1
            if isDigit(i) { return nil }
        } else {
            while isDigit(i) { i += 1 }
        }
        if i < bytes.count, bytes[i] == UInt8(ascii: ".") {
            i += 1
            guard isDigit(i) else { return nil }
            while isDigit(i) { i += 1 }
        }
        if i < bytes.count, bytes[i] == UInt8(ascii: "e") || bytes[i] == UInt8(ascii: "E") {
            i += 1
            if i < bytes.count, bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-") { i += 1 }
            guard isDigit(i) else { return nil }
            while isDigit(i) { i += 1 }
        }
        return i
    }

    /// The end of the literal whose bytes (first in the low byte) are `word`.
    private static func literal(_ bytes: UnsafeRawBufferPointer, at offset: Int, _ word: UInt64, length: Int) -> Int? {
        guard offset + length <= bytes.count else { return nil }
        var actual: UInt64 = 0
        for index in 0..<length { actual |= UInt64(bytes[offset + index]) << (UInt64(index) * 8) }
        return actual == word ? offset + length : nil
    }
}

/// A JSON object read by key on demand (`PayloadObject` does the work).
struct PayloadKeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let object: PayloadObject
    var codingPath: [any CodingKey] { object.codingPath }

    /// Splits the object into members.
    /// - Throws: `typeMismatch` when the value is not an object, `dataCorrupted` when malformed.
    init(decoder: PayloadDecoder) throws {
        object = try PayloadObject.split(decoder)
    }

    /// Every key, as `Key`s (keys that `Key` does not know are left out).
    var allKeys: [Key] {
        object.members.compactMap { Key(stringValue: object.name(of: $0)) }
    }

    func contains(_ key: Key) -> Bool { object.member(named: key.stringValue) != nil }

    /// The path of `key`'s value, for errors.
    private func path(_ key: Key) -> [any CodingKey] { PayloadPath.codingPath(object.path, appending: key) }

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
        PayloadDecoder(source: object.source, range: try range(key), path: PayloadPath(parent: object.path, key: key))
    }

    /// The range of `key`'s value, refusing `null` for a non-optional.
    ///
    /// Why a range and not a child decoder: the primitive fields below parse it in place
    /// (`PayloadSource`), and build the coding path only when they throw.
    /// - Throws: `keyNotFound`, or `valueNotFound` for `null`.
    private func present(_ key: Key, _ type: Any.Type) throws -> Range<Int> {
        let value = try range(key)
        if object.source.isNull(value) {
            throw DecodingError.valueNotFound(type, DecodingError.Context(codingPath: path(key), debugDescription: "null for \(type)"))
        }
        return value
    }

    /// Any fixed-width integer field.
    private func integer<Integer: FixedWidthInteger>(_ type: Integer.Type, _ key: Key) throws -> Integer {
        try object.source.integer(type, present(key, type), path: path(key))
    }

    func decodeNil(forKey key: Key) throws -> Bool { object.source.isNull(try range(key)) }
    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try object.source.bool(present(key, type), path: path(key)) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try object.source.string(present(key, type), path: path(key)) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try object.source.double(present(key, type), path: path(key)) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try object.source.int(present(key, type), path: path(key)) }
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
        return object.decoder.child(member.value, key: PayloadIndexKey(0))
    }

    func superDecoder(forKey key: Key) throws -> any Decoder { try value(key) }
}
