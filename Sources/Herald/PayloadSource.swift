import HeraldWire

/// The bytes a `PayloadDecoder` and its containers read, and the primitive parsers over a
/// value's range in them.
///
/// A struct over the payload's own array (no allocation per payload: copies share the buffer).
///
/// Why the parsers live here: a keyed container decoding an `Int` or a `String` field used to
/// build a child `PayloadDecoder` per field (retaining the bytes and the coding path, boxing the
/// key), which was most of the per-field cost. Parsing the member's range directly needs none
/// of that; the coding path is built only when a parser throws (`path` is an autoclosure).
struct PayloadSource {
    let bytes: [UInt8]

    init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// Whether the value at `range` is `null`.
    func isNull(_ range: Range<Int>) -> Bool { bytes[range.lowerBound] == UInt8(ascii: "n") }

    /// `true` or `false` (the lexer has validated the literal; its length tells which).
    func bool(_ range: Range<Int>, path: @autoclosure () -> [any CodingKey]) throws -> Bool {
        switch bytes[range.lowerBound] {
        case UInt8(ascii: "t") where range.count == 4: return true
        case UInt8(ascii: "f") where range.count == 5: return false
        default: throw Self.mismatch(Bool.self, path())
        }
    }

    /// A string; without escapes it is made from the bytes in one step.
    func string(_ range: Range<Int>, path: @autoclosure () -> [any CodingKey]) throws -> String {
        guard bytes[range.lowerBound] == UInt8(ascii: "\""), range.count >= 2 else { throw Self.mismatch(String.self, path()) }
        return bytes.withUnsafeBytes { raw in
            let contents = UnsafeRawBufferPointer(rebasing: raw[(range.lowerBound + 1)..<(range.upperBound - 1)])
            if contents.firstIndex(of: UInt8(ascii: "\\")) == nil { return String(decoding: contents, as: UTF8.self) }
            return JSONTokens.decodeString(raw, from: range.lowerBound + 1, to: range.upperBound - 1)
        }
    }

    /// An integer written as one: optional `-`, digits, nothing else, in range.
    ///
    /// Written without closures or tuples over `Integer`: reached from unspecialized code
    /// (the standard library's container box), those looked up type metadata per call.
    /// - Throws: `typeMismatch` for anything else, `dataCorrupted` when it does not fit.
    func integer<Integer: FixedWidthInteger>(_ type: Integer.Type, _ range: Range<Int>,
                                              path: @autoclosure () -> [any CodingKey]) throws -> Integer {
        var i = range.lowerBound
        let negative = bytes[i] == UInt8(ascii: "-")
        if negative { i += 1 }
        guard i < range.upperBound else { throw Self.mismatch(Integer.self, path()) }
        var value: Integer = 0
        while i < range.upperBound {
            let digit = bytes[i] &- UInt8(ascii: "0")
            guard digit < 10 else { throw Self.mismatch(Integer.self, path()) }
            let (times, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (next, overflow2) = negative ? times.subtractingReportingOverflow(Integer(digit))
                                             : times.addingReportingOverflow(Integer(digit))
            guard !overflow1, !overflow2 else { throw PayloadDecoder.corrupted(path(), "number does not fit in \(Integer.self)") }
            value = next
            i += 1
        }
        return value
    }

    /// `integer(Int.self, …)` without generics: `Int` is the common field.
    func int(_ range: Range<Int>, path: @autoclosure () -> [any CodingKey]) throws -> Int {
        var i = range.lowerBound
        let negative = bytes[i] == UInt8(ascii: "-")
        if negative { i += 1 }
        guard i < range.upperBound else { throw Self.mismatch(Int.self, path()) }
        var value = 0
        while i < range.upperBound {
            let digit = bytes[i] &- UInt8(ascii: "0")
            guard digit < 10 else { throw Self.mismatch(Int.self, path()) }
            let (times, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (next, overflow2) = negative ? times.subtractingReportingOverflow(Int(digit))
                                             : times.addingReportingOverflow(Int(digit))
            guard !overflow1, !overflow2 else { throw PayloadDecoder.corrupted(path(), "number does not fit in Int") }
            value = next
            i += 1
        }
        return value
    }

    /// A `Double`: exact fast path for up to 15 significant digits and a short fraction
    /// (both operands exact, so the one division rounds correctly); else the standard parser.
    func double(_ range: Range<Int>, path: @autoclosure () -> [any CodingKey]) throws -> Double {
        let fast = bytes.withUnsafeBytes { raw -> Double? in
            var i = range.lowerBound
            let negative = raw[i] == UInt8(ascii: "-")
            if negative { i += 1 }
            var mantissa: UInt64 = 0
            var digits = 0
            var fraction = 0
            var seenDot = false
            while i < range.upperBound {
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
        let first = bytes[range.lowerBound]
        guard first == UInt8(ascii: "-") || (first >= UInt8(ascii: "0") && first <= UInt8(ascii: "9")),
              let value = Double(text(range)) else { throw Self.mismatch(Double.self, path()) }
        return value
    }

    /// The value's bytes as text (numbers for the slow paths).
    func text(_ range: Range<Int>) -> String {
        String(decoding: bytes[range], as: UTF8.self)
    }

    static let powersOfTen: [Double] = (0...22).map { exponent in
        var value = 1.0
        for _ in 0..<exponent { value *= 10 }
        return value
    }

    /// The error for a value of the wrong JSON kind.
    static func mismatch(_ type: Any.Type, _ path: [any CodingKey]) -> DecodingError {
        DecodingError.typeMismatch(type, DecodingError.Context(codingPath: path, debugDescription: "expected \(type)"))
    }
}
