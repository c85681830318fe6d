import Testing
@testable import HeraldServer

/// The handler announcements of the interest channel (`ClusterHandlerScripts`): names may
/// hold any byte, lengths are checked, and numbers too long for an `Int` are refused, never
/// trapped on (the lock announcements share that rule).
@Suite struct ClusterHandlerMessageTests {
    private func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    @Test func anAdditionCarriesEachHandlersScorePatternAndName() {
        let message = ClusterHandlerMessage(bytes("HA3 17 12884901889 4 app.* 6:a b\nc: 5 > 1:z"))
        #expect(message?.op == UInt8(ascii: "A") && message?.node == 3 && message?.version == 17)
        #expect(message?.owner == 12_884_901_889)
        #expect(message?.handlers.map(\.score) == [4, 5])
        #expect(message?.handlers.map(\.pattern) == [bytes("app.*"), bytes(">")])
        #expect(message?.handlers.map(\.name) == [bytes("a b\nc:"), bytes("z")])
    }

    @Test func removalsCarryNamesAndAnOwnersDepartureNothing() {
        let removal = ClusterHandlerMessage(bytes("HR3 18 9 3:x y 1:z"))
        #expect(removal?.names == [bytes("x y"), bytes("z")] && removal?.handlers.isEmpty == true)
        let departure = ClusterHandlerMessage(bytes("HX3 19 9"))
        #expect(departure?.op == UInt8(ascii: "X") && departure?.names.isEmpty == true)
    }

    @Test func aMalformedAnnouncementIsRefused() {
        let bad = ["HA3 17 9 4 app 9:short", "HQ3 17 9", "HA3 17", "HX3 19 9 1:z", "HA3 17 9 x app 1:z", "HR3 18 9 3x",
                   "HA3 99999999999999999999 9", "H", "HA3 17 9 4 app"]
        for text in bad { #expect(ClusterHandlerMessage(bytes(text)) == nil, "\(text)") }
        #expect(ClusterLockMessage(bytes("L3 9999999999999999999 9")) == nil, "19 digits overflow an Int: refused")
    }
}
