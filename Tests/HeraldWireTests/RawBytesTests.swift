import Testing
@testable import HeraldWire

/// `RawBytes.areEqual`: the word loads must agree with a byte-by-byte comparison at every
/// length around their edges (0–3 bytes, 4–7, 8–16, past 16), at every differing position,
/// from unaligned addresses.
@Suite struct RawBytesTests {
    @Test func agreesWithAByteComparisonAtEveryLengthAndDifference() {
        for count in 0...40 {
            for offset in 0..<3 {
                var a = [UInt8](repeating: 0, count: count + offset + 1)
                for i in 0..<a.count { a[i] = UInt8(truncatingIfNeeded: 31 &* i &+ 7) }
                var b = a
                #expect(compare(a, b, offset: offset, count: count), "equal, \(count) bytes at +\(offset)")
                for position in offset..<(count + offset) {
                    b[position] ^= 0x40
                    #expect(!compare(a, b, offset: offset, count: count), "byte \(position - offset) of \(count) differs")
                    b[position] ^= 0x40
                }
            }
        }
    }

    @Test func readsNothingOutsideTheRunsItCompares() {
        // Bytes outside the runs differ; only the runs decide.
        let a: [UInt8] = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]
        let b: [UInt8] = [99, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 77]
        for count in 0...10 {
            let equal = a.withUnsafeBytes { x in
                b.withUnsafeBytes { y in RawBytes.areEqual(x.baseAddress! + 1, y.baseAddress! + 1, count: count) }
            }
            #expect(equal, "\(count) bytes from the second")
        }
    }

    private func compare(_ a: [UInt8], _ b: [UInt8], offset: Int, count: Int) -> Bool {
        a.withUnsafeBytes { x in
            b.withUnsafeBytes { y in RawBytes.areEqual(x.baseAddress! + offset, y.baseAddress! + offset, count: count) }
        }
    }
}
