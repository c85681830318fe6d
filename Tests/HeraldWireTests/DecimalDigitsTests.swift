import Testing
@testable import HeraldWire

/// `DecimalDigits` (issue 16): the digit count and the two-digits-per-step writer agree with
/// `String(_:)` at every power-of-ten boundary and at the extremes.
@Suite struct DecimalDigitsTests {
    static let values: [UInt] = {
        var values: [UInt] = [0, 1, 9, UInt.max, UInt(Int.max), UInt(Int.max) + 1]
        var power: UInt = 10
        while true {
            values += [power - 1, power, power + 1]
            let (next, overflow) = power.multipliedReportingOverflow(by: 10)
            if overflow { break }
            power = next
        }
        return values
    }()

    @Test(arguments: values)
    func digitsMatchTheStandardLibrary(_ value: UInt) {
        let expected = Array(String(value).utf8)
        #expect(DecimalDigits.count(value) == expected.count)
        var buffer = [UInt8](repeating: UInt8(ascii: "#"), count: 24)
        buffer.withUnsafeMutableBufferPointer { bytes in
            DecimalDigits.write(value, endingAt: bytes.baseAddress! + 22)
        }
        #expect(Array(buffer[(22 - expected.count)..<22]) == expected)
        #expect(buffer[..<(22 - expected.count)].allSatisfy { $0 == UInt8(ascii: "#") }, "nothing written before the digits")
        #expect(buffer[22...].allSatisfy { $0 == UInt8(ascii: "#") }, "nothing written after them")
    }
}
