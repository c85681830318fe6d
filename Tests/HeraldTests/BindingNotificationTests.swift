import Foundation
import Herald
import HeraldTestSupport
import Testing

/// Issue 17, "Bindings the seeds had": `touch` reaches mirror observers with the unchanged
/// value (SwiftBinding's `alertChangeListeners`), and list observers are told what changed.
@Suite struct BindingNotificationTests {
    @Test func touchReachesValueObserversWithTheUnchangedValue() async throws {
        let daemon = try TestDaemon()
        let client = try await connectedClient(daemon)
        let writer = try await connectedClient(daemon, name: "writer")
        defer { client.close(); writer.close() }
        let channel = Channel("app", "touch", "theme")
        let rev = try await writer.set(Theme(mode: "dark"), at: channel)
        let theme = try await client.remoteValue(Theme.self, at: channel)
        let calls = LockedValue<[String]>([])
        let watching = theme.observe(alertNow: false) { value, rev in calls.withLock { $0.append("\(value?.mode ?? "-")@\(rev)") } }
        _ = try await writer.touch(channel)
        #expect(await eventually { calls.value == ["dark@\(rev)"] }, "got \(calls.value)")
        watching.cancel()
    }

    @Test func listObserversAreToldWhatChanged() async throws {
        let daemon = try TestDaemon()
        let client = try await connectedClient(daemon)
        let writer = try await connectedClient(daemon, name: "writer")
        defer { client.close(); writer.close() }
        let channel = Channel("app", "touch", "todo")
        let list = try await client.remoteList(String.self, at: channel)
        let changes = LockedValue<[ListChange]>([])
        let watching = list.observeChanges(alertNow: false) { _, change, _ in changes.withLock { $0.append(change) } }
        let edits = try await writer.remoteList(String.self, at: channel)
        try await edits.append("milk")
        try await edits.append("eggs")
        try await edits.assign("oat milk", at: 0)
        try await edits.splice(at: 1, remove: 1, insert: ["eggs", "bread"])
        try await writer.set(["tea"], at: channel)
        _ = try await writer.touch(channel)
        let expected: [ListChange] = [.index(0), .index(1), .index(0), .structural(1..<2, inserted: 2), .whole, .touched]
        #expect(await eventually { changes.value == expected }, "got \(changes.value)")
        #expect(list.current.value == ["tea"])
        watching.cancel()
    }
}

/// Issue 17: `combine` takes any number of sources (a parameter pack), not only two or three.
@Suite struct CombineManyTests {
    @Test func combineFollowsFourSourcesOfDifferentKinds() async throws {
        let daemon = try TestDaemon()
        let client = try await connectedClient(daemon)
        defer { client.close() }
        let name = Channel("app", "many", "name")
        let count = Channel("app", "many", "count")
        let flag = Channel("app", "many", "flag")
        let list = Channel("app", "many", "list")
        try await client.set("ann", at: name)
        try await client.set(2, at: count)
        try await client.set(true, at: flag)
        try await client.set(["a"], at: list)
        let who = try await client.remoteValue(String.self, at: name)
        let howMany = try await client.remoteValue(Int.self, at: count)
        let on = try await client.remoteValue(Bool.self, at: flag)
        let items = try await client.remoteList(String.self, at: list)
        let label = combine(who, howMany.map { $0 * 10 }, on, items) { who, tens, on, items in
            "\(who) \(tens) \(on) \(items.joined(separator: ","))"
        }
        #expect(label.current == "ann 20 true a", "seeded from every input on creation")
        try await client.set(3, at: count)
        try await items.append("b")
        #expect(await eventually { label.current == "ann 30 true a,b" }, "got \(String(describing: label.current))")
        try await client.delete(at: flag)
        #expect(await eventually { label.current == nil }, "nil while an input has no value")
    }
}
