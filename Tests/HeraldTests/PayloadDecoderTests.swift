import Foundation
@testable import Herald
import Testing

/// The byte-level decoder (issue 17, "Fast typed decoding") must give what Foundation's
/// `JSONDecoder` gives, and decline (so `RawJSON.decode` falls back) where it would differ.
@Suite struct PayloadDecoderTests {
    struct Tick: Codable, Equatable {
        var id: Int
        var symbol: String
        var price: Double
        var volume: Int64
        var live: Bool
    }

    struct Nested: Codable, Equatable {
        enum Side: String, Codable { case buy, sell }
        var name: String?
        var ticks: [Tick]
        var tags: [String: Int]
        var side: Side
        var maybe: [Int?]
        var when: Date
        var blob: Data
        var link: URL
        var amount: Decimal
        var small: UInt8
        var negative: Int32
    }

    private func same<T: Codable & Equatable>(_ json: String, as type: T.Type) throws {
        let expected = try JSONDecoder().decode(T.self, from: Data(json.utf8))
        let fast = try PayloadDecoder.decode(T.self, from: Array(json.utf8))
        #expect(fast == expected, "\(json)")
    }

    @Test func decodesLikeJSONDecoder() throws {
        try same(#"{"id":7,"symbol":"ACME","price":12.25,"volume":1000000,"live":true}"#, as: Tick.self)
        try same(#" { "live" : false , "volume":-3,"price":-0.5e3,"symbol":"a\"b\\c\u00e9\ud83d\ude00","id":0 } "#, as: Tick.self)
        try same(#"{"id":1,"symbol":"x","price":0.1,"volume":9223372036854775807,"live":true,"extra":{"a":[1,2,{"b":null}]}}"#, as: Tick.self)
        try same(#"{"name":null,"ticks":[{"id":1,"symbol":"é","price":1e-7,"volume":0,"live":true}],"tags":{"a":1,"b\n":2},"side":"sell","maybe":[1,null,3],"when":12.5,"blob":"aGVsbG8=","link":"https://example.com/a?b=c","amount":1.25,"small":255,"negative":-2147483648}"#, as: Nested.self)
        try same(#"[1,2,3]"#, as: [Int].self)
        try same(#""text""#, as: String.self)
        try same(#"3.141592653589793"#, as: Double.self)
        try same(#"123456789012.125"#, as: Double.self)
        try same(#"{"k":{"x":[{},{"a":1}]}}"#, as: [String: [String: [[String: Int]]]].self)
    }

    @Test func doublesAreExactlyFoundations() throws {
        for text in ["0.1", "0.3", "1.7976931348623157e308", "5e-324", "2.2250738585072014e-308", "9007199254740993", "0.000001", "-123.456", "100000000000000000000000"] {
            try same(text, as: Double.self)
        }
    }

    @Test func declinesWhatJSONDecoderWouldJudgeDifferently() throws {
        #expect(throws: (any Error).self) { try PayloadDecoder.decode(Int.self, from: Array("1.0".utf8)) }
        #expect(throws: (any Error).self) { try PayloadDecoder.decode(Float.self, from: Array("1.5".utf8)) }
        #expect(throws: (any Error).self) { try PayloadDecoder.decode(UInt8.self, from: Array("256".utf8)) }
        #expect(throws: (any Error).self) { try PayloadDecoder.decode(Tick.self, from: Array(#"{"id":1} trailing"#.utf8)) }
        #expect(throws: (any Error).self) { try PayloadDecoder.decode(Tick.self, from: Array(#"{"id":1,"symbol":"x""#.utf8)) }
        #expect(throws: (any Error).self) { try PayloadDecoder.decode(Bool.self, from: Array("tru".utf8)) }
        #expect(throws: (any Error).self) { try PayloadDecoder.decode(String.self, from: Array("\"a\u{1}\"".utf8)) }
        // Through RawJSON the fallback still gives JSONDecoder's answers and errors.
        #expect(try RawJSON("1.0").decode(as: Int.self) == 1)
        #expect(try RawJSON("1.5").decode(as: Float.self) == 1.5)
        #expect(throws: HeraldClientError.self) { try RawJSON("256").decode(as: UInt8.self) }
    }
}
