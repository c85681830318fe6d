import Foundation
import Testing
@testable import HeraldServer

/// History settings against what replays and the machine can carry (issue 13).
@Suite struct ConfigHistoryTests {
    static let gib = 1 << 30

    @Test func historyBytesAboveMemoryIsRefusedNamingTheKey() {
        var config = Config()
        config.history = 1_000_000
        config.historyBytes = 8 * Self.gib
        #expect(config.historyProblem(memory: 4 * Self.gib)?.description
            == "bad value for \"history_bytes\": 8589934592 is more than this machine's memory (4294967296 bytes); "
            + "the cap could never take effect")
        config.history = 0
        #expect(config.historyProblem(memory: 4 * Self.gib) == nil, "no history kept: the cap does not matter")
    }

    @Test func theIssuesSettingsAreAcceptedNowThatReplaysAreFlowControlledIssue13() throws {
        let config = try Config.decode(json5: Data("{ history: 1000000, history_bytes: 1073741824 }".utf8),
                                       source: "heraldd.json5")
        #expect(config.historyProblem(memory: 4 * Self.gib) == nil)
        #expect(config.historyWarnings(memory: 4 * Self.gib).isEmpty, "far above max_pending_total is fine")
    }

    @Test func riskySettingsAreWarnedAbout() {
        var config = Config()
        config.historyBytes = 3 * Self.gib
        #expect(config.historyWarnings(memory: 4 * Self.gib).first?.contains("more than half") == true)
        config.historyBytes = 0
        #expect(config.historyWarnings(memory: 4 * Self.gib) == ["history is 100 but history_bytes 0 keeps no events"])
        config.historyBytes = 1 << 20
        config.maxPending = 65_536
        #expect(config.historyWarnings(memory: 4 * Self.gib).first?.hasPrefix("max_pending 65536 is below the largest event")
            == true)
        #expect(Config().historyWarnings(memory: 4 * Self.gib).isEmpty, "the defaults are not risky")
    }
}
