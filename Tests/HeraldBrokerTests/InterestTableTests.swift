@testable import HeraldBroker
import Testing

/// The cluster routing table (`InterestTable`): which nodes an event goes to, and what
/// forgetting a departed node leaves behind.
struct InterestTableTests {
    private func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    /// A table with `changes` applied in order.
    private func makeTable(_ changes: [(node: Int, pattern: String, added: Bool, version: Int)]) -> InterestTable {
        let table = InterestTable()
        for change in changes {
            table.apply(node: change.node, pattern: bytes(change.pattern), added: change.added, version: change.version)
        }
        return table
    }

    @Test func forgettingANodeRemovesItsPatternsAndGroupsAndKeepsOtherNodes() {
        let table = makeTable([(1, "cars.*", true, 1), (2, "cars.*", true, 2), (2, "cars.1", true, 3), (2, "jobs.> workers", true, 4)])
        #expect(table.nodes(for: bytes("cars.1")) == [1, 2])
        #expect(table.groups(for: bytes("jobs.a")) == [bytes("jobs.> workers")])
        table.forget(node: 2)
        #expect(table.nodes(for: bytes("cars.1")) == [1])
        #expect(table.nodes(for: bytes("jobs.a"), includingGroups: true) == [])
        #expect(table.groups(for: bytes("jobs.a")) == [])
        table.apply(node: 2, pattern: bytes("cars.1"), added: true, version: 5)
        #expect(table.nodes(for: bytes("cars.1")) == [1, 2], "a node registering again after an outage is routed to")
    }

    @Test func forgettingANodeLeavesNoEntryForPatternsOnlyItHeld() {
        let table = InterestTable()
        for n in 0..<10_000 {
            table.apply(node: 7, pattern: bytes("user.\(n).*"), added: true, version: n + 1)
            table.apply(node: 7, pattern: bytes("user.\(n)"), added: true, version: n + 1)
        }
        table.apply(node: 8, pattern: bytes("user.5"), added: true, version: 20_001)
        table.forget(node: 7)
        #expect(table.entryCount == 1, "only node 8's pattern is left")
        #expect(table.nodes(for: bytes("user.5")) == [8])
        #expect(table.nodes(for: bytes("user.5.x")) == [])
    }

    @Test func afterForgettingVersionsLowerVersionsApplyAndHoldersStay() {
        let table = makeTable([(1, "v.a", true, 40), (1, "v.b", true, 41), (1, "v.b", false, 42), (2, "v.* g", true, 43)])
        #expect(!table.apply(node: 1, pattern: bytes("v.b"), added: true, version: 3), "an older change is refused")
        table.forgetVersions()
        #expect(table.nodes(for: bytes("v.a")) == [1], "who holds what stays")
        #expect(table.groups(for: bytes("v.a")) == [bytes("v.* g")])
        #expect(table.apply(node: 1, pattern: bytes("v.b"), added: true, version: 3), "a change of the new versions applies")
        #expect(table.nodes(for: bytes("v.b")) == [1])
        #expect(table.apply(node: 2, pattern: bytes("v.* g"), added: false, version: 1), "group entries too")
        #expect(table.groups(for: bytes("v.a")) == [])
        #expect(!table.apply(node: 1, pattern: bytes("v.b"), added: false, version: 2), "and from then on versions order changes again")
    }

    @Test func forgettingTheVersionsOfALargeTableKeepsEveryEntry() {
        let table = InterestTable()
        for n in 0..<20_000 {
            table.apply(node: n % 3, pattern: bytes("user.\(n).*"), added: true, version: 100_000 + n)
            table.apply(node: n % 3, pattern: bytes("user.\(n)"), added: n % 2 == 0, version: 100_000 + n)
        }
        table.forgetVersions()
        #expect(table.entryCount == 40_000)
        #expect(table.apply(node: 1, pattern: bytes("user.1"), added: true, version: 1))
        #expect(table.nodes(for: bytes("user.1")) == [1])
        #expect(table.nodes(for: bytes("user.2")) == [2])
    }
}

/// A ready node's routing table gives its memory back when patterns and queue groups leave
/// (issue 32, item 10: 40,000 group names churned on one node left 20–24 MiB on each other
/// node, 20,000 patterns 12 MiB).
@Suite struct InterestTableChurnTests {
    @Test func removalsInOrderForgetTheirEntriesSoChurnLeavesNothing() {
        let table = InterestTable()
        table.apply(node: 2, pattern: Array("keep.*".utf8), added: true, version: 1)
        var version = 1
        for n in 0..<40_000 {
            for (pattern, added) in [("g.\(n) group\(n)", true), ("p.\(n).*", true), ("g.\(n) group\(n)", false), ("p.\(n).*", false)] {
                version += 1
                table.apply(node: 1, pattern: Array(pattern.utf8), added: added, version: version, dropsRemoved: true)
            }
        }
        #expect(table.entryCount == 1, "only the pattern still held is left")
        #expect(table.nodes(for: Array("keep.x".utf8)) == [2])
    }

    @Test func removalsBeforeTheNodeIsReadyKeepTheirVersionAgainstAnOlderSnapshotEntry() {
        let table = InterestTable()
        table.apply(node: 1, pattern: Array("a.b".utf8), added: false, version: 5)
        #expect(!table.apply(node: 1, pattern: Array("a.b".utf8), added: true, version: 4), "a snapshot older than the removal")
        #expect(table.nodes(for: Array("a.b".utf8)).isEmpty)
    }
}
