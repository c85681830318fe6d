import Foundation
@testable import Herald
@testable import HeraldExamples
import HeraldTestSupport
import Observation
import Testing

/// Calculated values over calculated values and lists, their lifetime, and `Observable`.
@Suite struct ChainedBindingTests {
    let todoChannel = Channel("app", "todo")
    let ownerChannel = Channel("app", "owner")

    @Test func calculatedOfCalculatedFollowsListEditsAndValueSets() async throws {
        let daemon = try TestDaemon()
        let writer = try await connectedClient(daemon)
        let reader = try await connectedClient(daemon)
        defer { writer.close(); reader.close() }
        try await writer.set([Todo(title: "milk", done: false), Todo(title: "mail", done: true)], at: todoChannel)
        try await writer.set("ann", at: ownerChannel)
        let todo = try await reader.remoteList(Todo.self, at: todoChannel)
        let owner = try await reader.remoteValue(String.self, at: ownerChannel)

        let label = openTodoLabel(todo, owner: owner)
        #expect(label.current == "ann: 1 open", "seeded through the chain on return")
        let seen = LockedValue<[String?]>([])
        let observation = label.observe { text in seen.withLock { $0.append(text) } }

        let writerList = try await writer.remoteList(Todo.self, at: todoChannel)
        try await writerList.append(Todo(title: "bread", done: false))
        #expect(await eventually { label.current == "ann: 2 open" })
        try await writerList.assign(Todo(title: "milk", done: true), at: 0)
        #expect(await eventually { label.current == "ann: 1 open" })
        try await writer.set("bob", at: ownerChannel)
        #expect(await eventually { label.current == "bob: 1 open" })
        try await writerList.splice(at: 0, remove: 3, insert: [])
        #expect(await eventually { label.current == "bob: 0 open" })
        #expect(await eventually { seen.value.last == "bob: 0 open" })
        #expect(seen.value.first == "ann: 1 open")

        // A map over a map, and a combine of a remote value with a calculated one.
        let count = todo.map(\.count)
        let doubled = count.map { $0 * 2 }
        let both = combine(owner, doubled) { name, twice in "\(name) \(twice)" }
        #expect(doubled.current == 0 && both.current == "bob 0")
        try await writerList.append(Todo(title: "tea", done: false))
        #expect(await eventually { doubled.current == 2 && both.current == "bob 2" })
        withExtendedLifetime(observation) {}
    }

    @Test func releasedChainIsDeallocatedAndStopsObservingItsInputs() async throws {
        let daemon = try TestDaemon()
        let writer = try await connectedClient(daemon)
        let reader = try await connectedClient(daemon)
        defer { writer.close(); reader.close() }
        let todo = try await reader.remoteList(Todo.self, at: todoChannel)
        let owner = try await reader.remoteValue(String.self, at: ownerChannel)
        weak var weakOpen: CalculatedValue<Int>?
        weak var weakLabel: CalculatedValue<String>?
        let calls = LockedValue(0)
        do {
            let open = todo.map { items -> Int in
                calls.withLock { $0 += 1 }
                return items.filter { !$0.done }.count
            }
            let label = combine(open, owner) { count, name in "\(name): \(count)" }
            weakOpen = open
            weakLabel = label
            let observation = label.observe { _ in }
            #expect(todo.observerCount == 1 && owner.observerCount == 1 && open.observerCount == 1)
            try await writer.set("ann", at: ownerChannel)
            try await writer.set([Todo(title: "a", done: false)], at: todoChannel)
            #expect(await eventually { label.current == "ann: 1" })
            observation.cancel()
        }
        try await drainOrdered(reader)
        #expect(await eventually { weakLabel == nil && weakOpen == nil }, "no retain cycle along the chain")
        #expect(todo.observerCount == 0 && owner.observerCount == 0, "the inputs' observations are cancelled")
        let before = calls.value
        try await writer.set([Todo(title: "b", done: false)], at: todoChannel)
        #expect(await eventually { todo.current.value?.first?.title == "b" })
        try await drainOrdered(reader)
        #expect(calls.value == before, "the transform runs no more")
    }

    @Test func remoteValueListAndCalculatedAreObservable() async throws {
        let daemon = try TestDaemon()
        let writer = try await connectedClient(daemon)
        let reader = try await connectedClient(daemon)
        defer { writer.close(); reader.close() }
        let todo = try await reader.remoteList(Todo.self, at: todoChannel)
        let owner = try await reader.remoteValue(String.self, at: ownerChannel)
        let count = todo.map(\.count)

        let fired = LockedValue<[String]>([])
        withObservationTracking { _ = owner.current } onChange: { fired.withLock { $0.append("owner") } }
        withObservationTracking { _ = todo.current } onChange: { fired.withLock { $0.append("todo") } }
        withObservationTracking { _ = count.current } onChange: { fired.withLock { $0.append("count") } }

        try await writer.set("ann", at: ownerChannel)
        #expect(await eventually { fired.value.contains("owner") })
        #expect(owner.current.value == "ann", "the change is visible when tracking fires")
        try await writer.set([Todo(title: "a", done: false)], at: todoChannel)
        #expect(await eventually { fired.value.contains("todo") && fired.value.contains("count") })
        #expect(count.current == 1)
        // Tracking is one-shot: later changes do not fire the same registration again.
        try await writer.set("bob", at: ownerChannel)
        #expect(await eventually { owner.current.value == "bob" })
        #expect(fired.value.filter { $0 == "owner" }.count == 1)
    }
}
