import Testing
import HeraldWire

/// `feed(_:limit:_:)`: the limit is asked for before every line, so a line that raises it
/// (a `hello` that authenticates) lets the next line of the same read through.
@Test func limitIsReadBeforeEachLineOfOneRead() {
    var framer = LineFramer(maxLine: 8)
    var limit = 8
    var seen: [String] = []
    let input = Array("short\n0123456789ab\nraise\n0123456789ab\n".utf8)
    input.withUnsafeBytes { bytes in
        framer.feed(bytes, limit: { limit }) { framed in
            switch framed {
            case .line(let line):
                let text = String(decoding: line, as: UTF8.self)
                seen.append(text)
                if text == "raise" { limit = 64 }
            case .tooLong(let length):
                seen.append("tooLong \(length)")
            }
        }
    }
    #expect(seen == ["short", "tooLong 12", "raise", "0123456789ab"])
    #expect(framer.maxLine == 64)
}

@Test func limitAppliesToAnUnfinishedLineCarriedOver() {
    var framer = LineFramer(maxLine: 4)
    var seen: [String] = []
    let record: (FramedLine) -> Void = { framed in
        if case .tooLong(let length) = framed { seen.append("tooLong \(length)") }
        if case .line(let line) = framed { seen.append(String(decoding: line, as: UTF8.self)) }
    }
    Array("abcdef".utf8).withUnsafeBytes { framer.feed($0, limit: { 4 }, record) }
    Array("gh\nok\n".utf8).withUnsafeBytes { framer.feed($0, limit: { 100 }, record) }
    #expect(seen == ["tooLong 6", "ok"], "the overlong line stays discarded up to its newline")
}
