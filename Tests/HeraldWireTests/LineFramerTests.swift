import Testing
import HeraldWire

/// What a framer reported, copied out of the callback so it can be compared after the pointer dies.
private enum Framed: Equatable, CustomStringConvertible {
    case line(String)
    case tooLong(Int)

    init(_ framed: FramedLine) {
        switch framed {
        case .line(let bytes): self = .line(String(decoding: bytes, as: UTF8.self))
        case .tooLong(let count): self = .tooLong(count)
        }
    }

    var description: String {
        switch self {
        case .line(let text): return "line(\(text.debugDescription))"
        case .tooLong(let count): return "tooLong(\(count))"
        }
    }
}

/// Feeds each chunk in turn and collects everything the framer reported.
private func frame(_ chunks: [[UInt8]], maxLine: Int = 1024) -> [Framed] {
    var framer = LineFramer(maxLine: maxLine)
    return feed(&framer, chunks)
}

private func feed(_ framer: inout LineFramer, _ chunks: [[UInt8]]) -> [Framed] {
    var out: [Framed] = []
    for chunk in chunks {
        chunk.withUnsafeBytes { framer.feed($0) { out.append(Framed($0)) } }
    }
    return out
}

private func bytes(_ s: String) -> [UInt8] { Array(s.utf8) }

/// A stream exercising every framing rule at once.
private let mixedStream = bytes("{\"op\":\"ping\"}\n\r\n\n{\"op\":\"sub\",\"ch\":\"a.>\"}\r\n   \na\rb\n\u{e9}t\u{e9}\n")
private let mixedLines: [Framed] = [
    .line("{\"op\":\"ping\"}"), .line("{\"op\":\"sub\",\"ch\":\"a.>\"}"), .line("   "), .line("a\rb"), .line("\u{e9}t\u{e9}"),
]

@Test func singleLineIsHandedOutWithoutItsNewline() {
    #expect(frame([bytes("{\"op\":\"ping\"}\n")]) == [.line("{\"op\":\"ping\"}")])
}

@Test func manyLinesInOneFeedComeOutInOrder() {
    #expect(frame([bytes("a\nbb\nccc\n")]) == [.line("a"), .line("bb"), .line("ccc")])
}

@Test func completeLinesAreSlicesOfTheFedBuffer() {
    var framer = LineFramer(maxLine: 64)
    var starts: [Int] = []
    var fedStart = 0
    bytes("ab\ncd\n").withUnsafeBytes { buffer in
        fedStart = Int(bitPattern: buffer.baseAddress)
        framer.feed(buffer) { framed in
            if case .line(let line) = framed { starts.append(Int(bitPattern: line.baseAddress)) }
        }
    }
    #expect(starts == [fedStart, fedStart + 3])
}

@Test func crlfLineEndingDropsTheCarriageReturn() {
    #expect(frame([bytes("a\r\nb\r\n")]) == [.line("a"), .line("b")])
}

@Test func bareCarriageReturnInsideALineIsKept() {
    #expect(frame([bytes("a\rb\n")]) == [.line("a\rb")])
    // Only one trailing "\r" belongs to the line ending.
    #expect(frame([bytes("a\r\r\n")]) == [.line("a\r")])
}

@Test func blankLinesAreSkippedButLinesOfSpacesArePassedOn() {
    #expect(frame([bytes("\n\r\n\n{}\n\r\n")]) == [.line("{}")])
    #expect(frame([bytes("  \n")]) == [.line("  ")])
}

@Test func emptyFeedReportsNothing() {
    #expect(frame([[], bytes("a"), [], bytes("\n"), []]) == [.line("a")])
}

@Test func unfinishedLineIsCarriedUntilItsNewline() {
    var framer = LineFramer(maxLine: 64)
    #expect(feed(&framer, [bytes("x\nabc")]) == [.line("x")])
    #expect(framer.carriedCount == 3)
    #expect(feed(&framer, [bytes("de")]).isEmpty)
    #expect(framer.carriedCount == 5)
    #expect(feed(&framer, [bytes("f\ny")]) == [.line("abcdef")])
    #expect(framer.carriedCount == 1)
}

@Test func carriedCrlfSplitBetweenFeedsIsDropped() {
    #expect(frame([bytes("abc\r"), bytes("\n")]) == [.line("abc")])
    #expect(frame([bytes("\r"), bytes("\n"), bytes("x\n")]) == [.line("x")])
}

@Test func splittingAStreamAtEveryBytePositionGivesTheSameLines() {
    for cut in 0...mixedStream.count {
        let chunks = [Array(mixedStream[..<cut]), Array(mixedStream[cut...])]
        #expect(frame(chunks) == mixedLines, "cut at \(cut)")
    }
}

@Test func splittingAStreamAtEveryPairOfPositionsGivesTheSameLines() {
    for first in 0...mixedStream.count {
        for second in first...mixedStream.count {
            let chunks = [Array(mixedStream[..<first]), Array(mixedStream[first..<second]), Array(mixedStream[second...])]
            #expect(frame(chunks) == mixedLines, "cuts at \(first), \(second)")
        }
    }
}

@Test func feedingOneByteAtATimeGivesTheSameLines() {
    #expect(frame(mixedStream.map { [$0] }) == mixedLines)
}

@Test func lineOfExactlyMaxLineIsAccepted() {
    let line = String(repeating: "x", count: 8)
    #expect(frame([bytes(line + "\n")], maxLine: 8) == [.line(line)])
    // Also when it is carried whole and its newline arrives alone.
    #expect(frame([bytes(line), bytes("\n")], maxLine: 8) == [.line(line)])
    #expect(frame(bytes(line + "\n").map { [$0] }, maxLine: 8) == [.line(line)])
}

@Test func lineOfMaxLinePlusOneIsTooLong() {
    let line = String(repeating: "x", count: 9)
    #expect(frame([bytes(line + "\n")], maxLine: 8) == [.tooLong(9)])
    #expect(frame([bytes(line), bytes("\n")], maxLine: 8) == [.tooLong(9)])
}

@Test func trailingCarriageReturnCountsTowardTheLimit() {
    #expect(frame([bytes("abcd\r\n")], maxLine: 4) == [.tooLong(5)])
    #expect(frame([bytes("abc\r\n")], maxLine: 4) == [.line("abc")])
}

@Test func overlongLineIsReportedOnceAndDiscardedUpToNewline() {
    let got = frame([bytes("0123456789abc\n{}\n")], maxLine: 8)
    #expect(got == [.tooLong(13), .line("{}")])
}

@Test func overlongLineIsReportedAsSoonAsItPassesTheLimitWithoutItsNewline() {
    var framer = LineFramer(maxLine: 8)
    #expect(feed(&framer, [bytes("ok\n0123456789")]) == [.line("ok"), .tooLong(10)])
    #expect(framer.carriedCount == 0)
}

@Test func overlongLineAcrossManyFeedsIsReportedOnceAndTheNextLineIsIntact() {
    var framer = LineFramer(maxLine: 8)
    #expect(feed(&framer, [bytes("0123"), bytes("4567")]).isEmpty)
    #expect(feed(&framer, [bytes("89")]) == [.tooLong(10)])
    for _ in 0..<100 {
        #expect(feed(&framer, [bytes("more bytes of the same line")]).isEmpty)
        #expect(framer.carriedCount == 0)
    }
    #expect(feed(&framer, [bytes("end\n{\"a"), bytes("\":1}\n")]) == [.line("{\"a\":1}")])
}

@Test func overlongLineFedOneByteAtATimeIsReportedOnce() {
    let stream = bytes(String(repeating: "z", count: 50) + "\nok\n")
    #expect(frame(stream.map { [$0] }, maxLine: 8) == [.tooLong(9), .line("ok")])
}

@Test func consecutiveOverlongLinesAreEachReported() {
    let got = frame([bytes("aaaaaaaaaa\nbbbbbbbbbbbb"), bytes("\ncc\n")], maxLine: 8)
    #expect(got == [.tooLong(10), .tooLong(12), .line("cc")])
}

@Test func carryNeverExceedsMaxLine() {
    let maxLine = 32
    var framer = LineFramer(maxLine: maxLine)
    // Lines of every length around the limit, fed in chunks of varying size.
    var stream: [UInt8] = []
    for length in 0...80 { stream += Array(repeating: UInt8(ascii: "q"), count: length) + [UInt8(ascii: "\n")] }
    var lines = 0
    var overlong = 0
    var offset = 0
    var chunkSize = 1
    while offset < stream.count {
        let end = min(offset + chunkSize, stream.count)
        Array(stream[offset..<end]).withUnsafeBytes { chunk in
            framer.feed(chunk) { framed in
                switch framed {
                case .line(let line): lines += 1; #expect(line.count <= maxLine)
                case .tooLong(let seen): overlong += 1; #expect(seen > maxLine)
                }
            }
        }
        #expect(framer.carriedCount <= maxLine)
        offset = end
        chunkSize = chunkSize % 17 + 3
    }
    #expect(lines == maxLine)  // lengths 1...32; the empty line is skipped
    #expect(overlong == 80 - maxLine)
}

@Test func loweredMaxLineAppliesToACarriedLine() {
    var framer = LineFramer(maxLine: 8)
    #expect(feed(&framer, [bytes("abcdef")]).isEmpty)
    framer.maxLine = 4
    #expect(feed(&framer, [bytes("\nok\n")]) == [.tooLong(6), .line("ok")])
}

@Test func largeCarriedLineIsHandedOutWhole() {
    let line = String(repeating: "0123456789", count: 10_000)
    let stream = bytes(line + "\n")
    var chunks: [[UInt8]] = []
    var offset = 0
    while offset < stream.count {
        chunks.append(Array(stream[offset..<min(offset + 4096, stream.count)]))
        offset += 4096
    }
    #expect(frame(chunks, maxLine: 1 << 20) == [.line(line)])
}
