import Testing
@testable import HeraldServer

/// The one number reader of the interest channel's messages (`ClusterWireNumber`): digits
/// only, 1 to 18 of them, shared by the lock, link, handler and interest parsers.
@Suite struct ClusterWireNumberTests {
    private func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    @Test func aNumberIsReadUpToTheFirstByteThatIsNoDigit() {
        var at = 1
        #expect(ClusterWireNumber.read(bytes("L123 4"), at: &at) == 123 && at == 4)
        #expect(ClusterWireNumber.parse(bytes("999999999999999999")) == 999_999_999_999_999_999)
    }

    @Test func signsEmptinessAndNineteenDigitsAreRefused() {
        for field in ["", "+5", "-5", "5x", "1234567890123456789"] {
            #expect(ClusterWireNumber.parse(bytes(field)) == nil, "\(field)")
        }
    }

    @Test func everyTablesParserSharesTheRule() {
        #expect(ClusterLinkMessage(bytes("K1 1234567890123456789 9 a b")) == nil, "a link's version of 19 digits")
        #expect(ClusterLinkMessage(bytes("K1 +2 9 a b")) == nil)
        #expect(ClusterLinkMessage(bytes("K1 2 9 a b"))?.version == 2)
        #expect(ClusterLockMessage(bytes("L1 2 9 3:a.*"))?.records == [bytes("a.*")])
        #expect(ClusterLockMessage(bytes("L1 2 9 4:a.*")) == nil, "a record longer than the message")
    }
}
