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

/// `feed(_:limit:pausing:_:)` (issue 12): a parked `hello` stops the feed right after its
/// line; the rest of the read is returned unread and, fed again later (with the limit the
/// verdict set), frames exactly as one feed would have.
@Test func pausingStopsRightAfterTheLineAndTheRestFramesLater() {
    var framer = LineFramer(maxLine: 8)
    var limit = 8
    var seen: [String] = []
    var parked = false
    let record: (FramedLine) -> Void = { framed in
        switch framed {
        case .line(let line):
            let text = String(decoding: line, as: UTF8.self)
            seen.append(text)
            if text == "hello" { parked = true }
        case .tooLong(let length):
            seen.append("tooLong \(length)")
        }
    }
    let input = Array("ping\nhello\n0123456789ab\npartial".utf8)
    let consumed = input.withUnsafeBytes { framer.feed($0, limit: { limit }, pausing: { parked }, record) }
    #expect(seen == ["ping", "hello"])
    #expect(consumed == 11 && framer.carriedCount == 0, "nothing of the rest is read or carried")
    parked = false
    limit = 64
    let rest = Array(input[consumed...])
    let second = rest.withUnsafeBytes { framer.feed($0, limit: { limit }, pausing: { parked }, record) }
    #expect(second == rest.count)
    #expect(seen == ["ping", "hello", "0123456789ab"], "the held line gets the limit set after the verdict")
    #expect(framer.carriedCount == 7, "an unfinished last line is carried as usual")
}
