@testable import HeraldBroker
import Testing

/// `FrameScratch.appendSeq` keeps the text of the last `seq` and increments it in place for
/// the next one: whatever order values come in (repeats, one more, carries into a new digit,
/// jumps back or ahead), the bytes written are the value's decimal text.
@Suite struct FrameScratchSeqTests {
    /// What `appendSeq(value)` writes into a reset scratch.
    private func written(_ scratch: FrameScratch, _ value: Int) -> String {
        scratch.reset()
        scratch.appendSeq(value)
        return String(decoding: scratch.bytes(0..<scratch.count), as: UTF8.self)
    }

    @Test func consecutiveSeqsCarryIntoNewDigits() {
        let scratch = FrameScratch()
        for value in 0...12_345 { #expect(written(scratch, value) == String(value)) }
        for start in [99_998, 999_998, 9_999_998, 99_999_999_998] {
            for value in start...(start + 3) { #expect(written(scratch, value) == String(value)) }
        }
    }

    @Test func repeatsJumpsAndTheLargestValueAreWrittenExactly() {
        let scratch = FrameScratch()
        let values = [7, 7, 8, 8, 8, 1_000, 999, 1_000, 0, 1, Int.max - 1, Int.max, 42, 43, 10, 9, 10, 11]
        for value in values { #expect(written(scratch, value) == String(value)) }
    }

    @Test func aSeqAfterOtherBytesLandsAfterThem() {
        let scratch = FrameScratch()
        scratch.append(#","seq":"#)
        scratch.appendSeq(199)
        scratch.append(#","seq":"#)
        scratch.appendSeq(200)
        #expect(String(decoding: scratch.bytes(0..<scratch.count), as: UTF8.self) == #","seq":199,"seq":200"#)
    }
}
