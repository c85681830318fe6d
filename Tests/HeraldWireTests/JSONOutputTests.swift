import Foundation
import Testing
import HeraldWire

/// Appends `s` as a JSON string to a fresh buffer and returns the result as text.
private func quoted(_ s: String) -> String {
    var out: [UInt8] = []
    out.appendJSONString(s)
    return String(decoding: out, as: UTF8.self)
}

/// Parses `[STRING]` with Foundation, the independent judge of what we emitted.
private func parsedBack(_ s: String) throws -> String? {
    var out: [UInt8] = []
    out.appendRaw("[")
    out.appendJSONString(s)
    out.appendRaw("]")
    let parsed = try JSONSerialization.jsonObject(with: Data(out)) as? [String]
    return parsed?.first
}

private func decimal(_ v: Int) -> String {
    var out: [UInt8] = []
    out.appendInt(v)
    return String(decoding: out, as: UTF8.self)
}

@Test func plainStringIsQuotedVerbatim() {
    #expect(quoted("cars.updated") == "\"cars.updated\"")
    #expect(quoted("") == "\"\"")
}

@Test func quoteAndBackslashAreEscaped() {
    #expect(quoted("say \"hi\"") == #""say \"hi\"""#)
    #expect(quoted(#"C:\dir\"#) == #""C:\\dir\\""#)
    #expect(quoted("\"\\") == #""\"\\""#)
}

@Test func everyControlCharacterIsEscaped() throws {
    let short: [UInt8: String] = [0x08: #"\b"#, 0x09: #"\t"#, 0x0A: #"\n"#, 0x0C: #"\f"#, 0x0D: #"\r"#]
    for byte in UInt8(0)..<0x20 {
        var out: [UInt8] = []
        out.appendJSONString([UInt8(ascii: "a"), byte, UInt8(ascii: "z")])
        let hex = String(byte, radix: 16)
        let escape = short[byte] ?? "\\u00" + (hex.count == 1 ? "0" + hex : hex)
        #expect(String(decoding: out, as: UTF8.self) == "\"a" + escape + "z\"", "byte \(byte)")
        #expect(!out.dropFirst().dropLast().contains { $0 < 0x20 }, "byte \(byte) left raw")
    }
}

@Test func deleteAndUnicodePassThroughUnescaped() {
    let text = "h\u{e9}llo \u{1F600} \u{65E5}\u{672C} \u{7F}"
    var out: [UInt8] = []
    out.appendJSONString(text)
    #expect(Array(out.dropFirst().dropLast()) == Array(text.utf8))
}

@Test func bytesAndBufferOverloadsAgreeWithTheStringOne() {
    let text = "a\"b\\c\nd\u{e9}"
    var fromBytes: [UInt8] = []
    fromBytes.appendJSONString(Array(text.utf8))
    var fromBuffer: [UInt8] = []
    Array(text.utf8).withUnsafeBytes { fromBuffer.appendJSONString($0) }
    #expect(String(decoding: fromBytes, as: UTF8.self) == quoted(text))
    #expect(fromBuffer == fromBytes)
}

@Test func escapedStringsRoundTripThroughJSONSerialization() throws {
    let controls = String(decoding: (0..<0x20).map { UInt8($0) }, as: UTF8.self)
    let samples = [
        "", "plain", "\"", "\\", "\\\"", controls, "mixed \"q\" \\ \n\t\u{1} end",
        "h\u{e9}llo \u{1F600} \u{65E5}\u{672C}", "\u{7F}", String(repeating: "long run ", count: 500) + "\n",
    ]
    for sample in samples {
        #expect(try parsedBack(sample) == sample)
    }
}

@Test func appendingKeepsWhatIsAlreadyInTheBuffer() {
    var out: [UInt8] = Array("prefix:".utf8)
    out.appendJSONString("x\ny")
    #expect(String(decoding: out, as: UTF8.self) == #"prefix:"x\ny""#)
}

@Test(arguments: [0, 1, 9, 10, 11, 99, 100, 101, 999, 1000, 12345, 1_000_000, -1, -9, -10, -99, -100, -12345, Int.max, Int.min, Int.max - 1, Int.min + 1])
func intsAreWrittenInDecimal(value: Int) {
    #expect(decimal(value) == String(value))
}

@Test func intsAroundEveryPowerOfTenAreWrittenInDecimal() {
    var power = 1
    for _ in 0..<18 {
        for value in [power - 1, power, power + 1, -power + 1, -power, -power - 1] {
            #expect(decimal(value) == String(value))
        }
        power *= 10
    }
    for value in -2000...2000 {
        #expect(decimal(value) == String(value))
    }
}

@Test func appendRawCopiesBytesVerbatim() {
    var out: [UInt8] = []
    out.appendRaw(#"{"ok":"sub","sub":"#)
    Array(#"{"id":42}"#.utf8).withUnsafeBytes { out.appendRaw($0) }
    out.appendRaw(UnsafeRawBufferPointer(start: nil, count: 0))
    out.appendRaw("")
    #expect(String(decoding: out, as: UTF8.self) == #"{"ok":"sub","sub":{"id":42}"#)
}

@Test func builtFrameParsesWithJSONSerialization() throws {
    var out: [UInt8] = []
    out.appendRaw(#"{"event":"#)
    out.appendJSONString("cars.updated")
    out.appendRaw(#","seq":"#)
    out.appendInt(Int.min)
    out.appendRaw(#","n":"#)
    out.appendInt(Int.max)
    out.appendRaw(#","from":"#)
    out.appendJSONString("c\"3\u{0}")
    out.appendRaw(#","data":"#)
    Array(#"{"id":42}"#.utf8).withUnsafeBytes { out.appendRaw($0) }
    out.appendRaw("}")
    let object = try #require(try JSONSerialization.jsonObject(with: Data(out)) as? [String: Any])
    #expect(object["event"] as? String == "cars.updated")
    #expect((object["seq"] as? NSNumber)?.int64Value == Int64.min)
    #expect((object["n"] as? NSNumber)?.int64Value == Int64.max)
    #expect(object["from"] as? String == "c\"3\u{0}")
    #expect((object["data"] as? [String: Any])?["id"] as? Int == 42)
}

/// A byte-at-a-time escaper, to check the word-at-a-time scan in the real one.
private func referenceEscape(_ input: [UInt8]) -> [UInt8] {
    var out: [UInt8] = [UInt8(ascii: "\"")]
    for byte in input {
        switch byte {
        case 0x22: out += Array(#"\""#.utf8)
        case 0x5C: out += Array(#"\\"#.utf8)
        case 0x08: out += Array(#"\b"#.utf8)
        case 0x09: out += Array(#"\t"#.utf8)
        case 0x0A: out += Array(#"\n"#.utf8)
        case 0x0C: out += Array(#"\f"#.utf8)
        case 0x0D: out += Array(#"\r"#.utf8)
        case ..<0x20:
            let hex = Array("0123456789abcdef".utf8)
            out += Array(#"\u00"#.utf8) + [hex[Int(byte >> 4)], hex[Int(byte & 0xF)]]
        default: out.append(byte)
        }
    }
    return out + [UInt8(ascii: "\"")]
}

@Test func specialByteAtEveryPositionIsFoundWhateverItsNeighbours() {
    // Bytes next to the thresholds of the word-at-a-time test, and high bytes whose XOR with
    // '"' or '\' sets only the top bit.
    let probes: [UInt8] = [0x00, 0x01, 0x1F, 0x20, 0x21, 0x22, 0x23, 0x5B, 0x5C, 0x5D, 0x7F, 0x80, 0xA2, 0xDC, 0xFF]
    for length in 1...24 {
        for position in 0..<length {
            for probe in probes {
                for filler: UInt8 in [UInt8(ascii: "a"), 0xA0] {
                    var input = [UInt8](repeating: filler, count: length)
                    input[position] = probe
                    var out: [UInt8] = []
                    out.appendJSONString(input)
                    #expect(out == referenceEscape(input), "length \(length), byte \(probe) at \(position)")
                }
            }
        }
    }
}

@Test func severalEscapesInOneStringAreAllFound() {
    let input: [UInt8] = Array("0123456\"89abcdef\\\n\u{1}xyz0123456789abcdefg\"".utf8)
    var out: [UInt8] = []
    out.appendJSONString(input)
    #expect(out == referenceEscape(input))
}
