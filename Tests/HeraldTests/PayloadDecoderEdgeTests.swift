import Foundation
@testable import Herald
import HeraldWire
import Testing

/// The edges of `PayloadDecoder`'s primitive fields, which parse a member's range in place
/// (`PayloadSource`) instead of through a child decoder: limits, escapes, optional and absent
/// keys, nested containers, and the exact `DecodingError` (case, type, coding path) for each
/// failure.
@Suite struct PayloadDecoderEdgeTests {
    struct Limits: Codable, Equatable {
        var int: Int
        var int8: Int8
        var uint64: UInt64
        var int64: Int64
        var double: Double
    }

    struct Optionals: Codable, Equatable {
        var a: Int?
        var b: String?
        var c: Bool?
        var d: Double?
    }

    struct Outer: Codable, Equatable {
        struct Inner: Codable, Equatable {
            var n: Int
            var s: String
        }
        var inner: Inner
        var list: [Inner]
    }

    struct Flag: Codable, Equatable { var ok: Bool }
    struct Text: Codable, Equatable { var s: String }
    struct Whole: Codable, Equatable { var n: Int }
    struct Small: Codable, Equatable { var n: UInt8 }
    struct Real: Codable, Equatable { var x: Double }

    private func decode<T: Decodable>(_ json: String, as type: T.Type) throws -> T {
        try PayloadDecoder.decode(T.self, from: Array(json.utf8))
    }

    /// The error as `case type path`, e.g. `typeMismatch Int inner.n`.
    private func failure<T: Decodable>(_ json: String, as type: T.Type) -> String {
        do {
            _ = try decode(json, as: type)
            return "decoded"
        } catch let error as DecodingError {
            let path: ([any CodingKey]) -> String = { $0.map { $0.intValue.map(String.init) ?? $0.stringValue }.joined(separator: ".") }
            switch error {
            case .typeMismatch(let type, let context): return "typeMismatch \(type) \(path(context.codingPath))"
            case .valueNotFound(let type, let context): return "valueNotFound \(type) \(path(context.codingPath))"
            case .keyNotFound(let key, let context): return "keyNotFound \(key.stringValue) \(path(context.codingPath))"
            case .dataCorrupted(let context): return "dataCorrupted \(path(context.codingPath))"
            @unknown default: return "unknown"
            }
        } catch {
            return "other \(error)"
        }
    }

    @Test func integersAndDoublesAtTheirLimits() throws {
        let json = #"{"int":-9223372036854775808,"int8":-128,"uint64":18446744073709551615,"int64":9223372036854775807,"double":1.7976931348623157e308}"#
        let limits = try decode(json, as: Limits.self)
        #expect(limits == Limits(int: .min, int8: .min, uint64: .max, int64: .max, double: .greatestFiniteMagnitude))
        #expect(limits == (try JSONDecoder().decode(Limits.self, from: Data(json.utf8))))
        #expect(try decode(#"{"n":9223372036854775807}"#, as: Whole.self).n == .max)
        #expect(try decode(#"{"n":-0}"#, as: Whole.self).n == 0)
        #expect(try decode(#"{"x":-0.0}"#, as: Real.self).x.sign == .minus)
        #expect(try decode(#"{"x":123456789012345}"#, as: Real.self).x == 123456789012345)
        #expect(try decode(#"{"x":1234567890123456789}"#, as: Real.self).x == Double("1234567890123456789"))
    }

    @Test func outOfRangeAndWrongNumbersFailAsBefore() {
        #expect(failure(#"{"n":9223372036854775808}"#, as: Whole.self) == "dataCorrupted n")
        #expect(failure(#"{"n":-9223372036854775809}"#, as: Whole.self) == "dataCorrupted n")
        #expect(failure(#"{"n":256}"#, as: Small.self) == "dataCorrupted n")
        #expect(failure(#"{"n":-1}"#, as: Small.self) == "dataCorrupted n")
        #expect(failure(#"{"n":1.5}"#, as: Whole.self) == "typeMismatch Int n")
        #expect(failure(#"{"n":1e2}"#, as: Whole.self) == "typeMismatch Int n")
        #expect(failure(#"{"n":-}"#, as: Whole.self) == "dataCorrupted ")
    }

    @Test func wrongTypesNullsAndMissingKeys() {
        #expect(failure(#"{"n":"7"}"#, as: Whole.self) == "typeMismatch Int n")
        #expect(failure(#"{"n":true}"#, as: Whole.self) == "typeMismatch Int n")
        #expect(failure(#"{"s":7}"#, as: Text.self) == "typeMismatch String s")
        #expect(failure(#"{"ok":1}"#, as: Flag.self) == "typeMismatch Bool ok")
        #expect(failure(#"{"x":"1.5"}"#, as: Real.self) == "typeMismatch Double x")
        #expect(failure(#"{"x":[1]}"#, as: Real.self) == "typeMismatch Double x")
        #expect(failure(#"{"n":null}"#, as: Whole.self) == "valueNotFound Int n")
        #expect(failure(#"{"s":null}"#, as: Text.self) == "valueNotFound String s")
        #expect(failure(#"{"ok":null}"#, as: Flag.self) == "valueNotFound Bool ok")
        #expect(failure(#"{"x":null}"#, as: Real.self) == "valueNotFound Double x")
        #expect(failure(#"{"m":1}"#, as: Whole.self) == "keyNotFound n ")
        #expect(failure(#"[1]"#, as: Whole.self) == "typeMismatch Dictionary<String, Any> ")
    }

    @Test func optionalAndAbsentKeys() throws {
        #expect(try decode(#"{}"#, as: Optionals.self) == Optionals())
        #expect(try decode(#"{"a":null,"b":null,"c":null,"d":null}"#, as: Optionals.self) == Optionals())
        #expect(try decode(#"{"a":1,"b":"x","c":false,"d":2.5}"#, as: Optionals.self) == Optionals(a: 1, b: "x", c: false, d: 2.5))
        #expect(failure(#"{"a":"1"}"#, as: Optionals.self) == "typeMismatch Int a")
    }

    @Test func escapesInStringsAndKeys() throws {
        #expect(try decode(#"{"s":"a\"b\\c\/d\n\t\u00e9\ud83d\ude00"}"#, as: Text.self).s == "a\"b\\c/d\n\té😀")
        #expect(try decode(#"{"s":""}"#, as: Text.self).s == "")
        #expect(try decode(#"{"\u0073":"escaped key"}"#, as: Text.self).s == "escaped key")
        // A repeated key: the last one wins, as with JSONDecoder.
        #expect(try decode(#"{"n":1,"n":2}"#, as: Whole.self).n == 2)
        #expect(try decode(#"{"n":1,"\u006e":3}"#, as: Whole.self).n == 3)
    }

    @Test func nestedContainersKeepTheirPaths() throws {
        let json = #"{"inner":{"n":1,"s":"a"},"list":[{"n":2,"s":"b"},{"n":3,"s":"c"}]}"#
        #expect(try decode(json, as: Outer.self) == (try JSONDecoder().decode(Outer.self, from: Data(json.utf8))))
        #expect(failure(#"{"inner":{"n":"1","s":"a"},"list":[]}"#, as: Outer.self) == "typeMismatch Int inner.n")
        #expect(failure(#"{"inner":{"n":1,"s":"a"},"list":[{"n":2,"s":null}]}"#, as: Outer.self) == "valueNotFound String list.0.s")
        #expect(failure(#"{"inner":{"n":1,"s":"a"},"list":[{"n":9223372036854775808,"s":"b"}]}"#, as: Outer.self) == "dataCorrupted list.0.n")
        #expect(failure(#"{"inner":{"s":"a"},"list":[]}"#, as: Outer.self) == "keyNotFound n inner")
    }
}

/// `PayloadObject` keeps its members in the object itself (32 on the stack first, then spilled)
/// and compares keys by their first eight bytes before the rest.
@Suite struct PayloadObjectTests {
    struct Wide: Codable, Equatable {
        var abcdefgh1: Int
        var abcdefgh2: Int
        var abcdefgh: Int
        var abcdefg: Int
        var a: Int
    }

    @Test func keysSharingTheirFirstEightBytes() throws {
        let json = #"{"abcdefgh2":2,"abcdefgh1":1,"abcdefg":4,"abcdefgh":3,"a":5,"abcdefgh3":9}"#
        let fast = try PayloadDecoder.decode(Wide.self, from: Array(json.utf8))
        #expect(fast == Wide(abcdefgh1: 1, abcdefgh2: 2, abcdefgh: 3, abcdefg: 4, a: 5))
        #expect(fast == (try JSONDecoder().decode(Wide.self, from: Data(json.utf8))))
    }

    @Test func objectsWithMoreMembersThanTheStackHolds() throws {
        for count in [0, 1, 31, 32, 33, 100] {
            let members = (0..<count).map { "\"k\($0)\":\($0)" }
            let json = "{" + members.joined(separator: ",") + "}"
            let fast = try PayloadDecoder.decode([String: Int].self, from: Array(json.utf8))
            #expect(fast == Dictionary(uniqueKeysWithValues: (0..<count).map { ("k\($0)", $0) }), "\(count)")
        }
        // The last of a repeated key wins, also past the stack's members.
        let repeated = "{" + (0..<40).map { "\"n\":\($0)" }.joined(separator: ",") + "}"
        #expect(try PayloadDecoder.decode(PayloadDecoderEdgeTests.Whole.self, from: Array(repeated.utf8)).n == 39)
    }

    @Test func nestedPathsInArraysOfPrimitives() {
        struct Lists: Codable { var a: [[Int]] }
        do {
            _ = try PayloadDecoder.decode(Lists.self, from: Array(#"{"a":[[1],[2,"x"]]}"#.utf8))
            Issue.record("decoded")
        } catch let DecodingError.typeMismatch(_, context) {
            #expect(context.codingPath.map { $0.intValue.map(String.init) ?? $0.stringValue } == ["a", "1", "1"])
        } catch {
            Issue.record("\(error)")
        }
    }
}

/// `PlainTokens` scans a payload's usual tokens itself: it must give `JSONTokens`'s end for each
/// token it takes, and nil (leaving it to `JSONTokens`) for anything else.
@Suite struct PlainTokensTests {
    @Test func plainTokensEndWhereTheLexerSays() {
        let tokens = [
            #""""#, #""a""#, #""ACME","#, #""0123456789abcdef""#, #""01234567""#, #""a\"b""#, #""é""#, "\"a\u{1}\"", #""unterminated"#,
            "0", "-0", "7,", "123.45}", "-1.5e3", "1E+2", "1e-7", "01", "1.", "-", "1.e3", "1e", "-a", "9223372036854775808",
            "true", "false", "null", "tru", "nul", "fals", "truex", "[1]", "{}", "x",
        ]
        for token in tokens {
            let bytes = Array(token.utf8)
            bytes.withUnsafeBytes { raw in
                let lexer = JSONTokens.value(raw, at: 0)?.end
                if let plain = PlainTokens.value(raw, at: 0) {
                    #expect(plain == lexer, "\(token)")
                }
            }
        }
        // The usual tokens are taken here, not left to the lexer.
        for token in [#""ACME""#, "123.45", "-7", "true", "false", "null"] {
            #expect(Array(token.utf8).withUnsafeBytes { PlainTokens.value($0, at: 0) } == token.utf8.count, "\(token)")
        }
    }
}
