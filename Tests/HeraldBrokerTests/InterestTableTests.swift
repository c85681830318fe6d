@testable import HeraldBroker
import Testing

/// The cluster routing table (`InterestTable`): which nodes an event goes to, and what
/// forgetting a departed node leaves behind.
struct InterestTableTests {
    private func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    @Test func forgettingANodeRemovesItsPatternsAndGroupsAndKeepsOtherNodes() {
        let table = InterestTable()
        table.apply(node: 1, pattern: bytes("cars.*"), added: true, version: 1)
        table.apply(node: 2, pattern: bytes("cars.*"), added: true, version: 2)
        table.apply(node: 2, pattern: bytes("cars.1"), added: true, version: 3)
        table.apply(node: 2, pattern: bytes("jobs.> workers"), added: true, version: 4)
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
}
