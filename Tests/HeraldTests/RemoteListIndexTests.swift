import Herald
import HeraldTestSupport
import Testing

/// Per-index observers of a `RemoteList`, and the `delete`/`touch` helpers.
@Suite struct RemoteListIndexTests {
    let todo = Channel("app", "todo")

    @Test func indexObserverSeesOnlyChangesThatReachItsIndex() async throws {
        let daemon = try TestDaemon()
        let writer = try await connectedClient(daemon)
        let reader = try await connectedClient(daemon)
        defer { writer.close(); reader.close() }
        try await writer.set(["a", "b", "c"], at: todo)
        let list = try await reader.remoteList(String.self, at: todo)
        let edit = try await writer.remoteList(String.self, at: todo)
        let second = LockedValue<[String?]>([])
        let watching = list.observe(index: 1) { element, _ in second.withLock { $0.append(element) } }
        #expect(await eventually { second.value == ["b"] }, "alert now")

        try await edit.assign("A", at: 0)                  // another index: not called
        try await edit.assign("B", at: 1)                  // this index
        try await edit.splice(at: 2, remove: 1, insert: ["C"])   // same length after it: not called
        try await edit.splice(at: 0, remove: 1, insert: [])      // shifts index 1: called with "C"
        #expect(await eventually { list.current.value == ["B", "C"] })
        #expect(await eventually { second.value == ["b", "B", "C"] })
        try await edit.append("D")                         // index 2: not called
        try await writer.delete(at: todo)                  // whole list: called, nothing there
        #expect(await eventually { second.value == ["b", "B", "C", nil] })
        #expect(list.current.value == [])
        watching.cancel()
        try await writer.set(["x", "y"], at: todo)
        #expect(await eventually { list.current.value == ["x", "y"] })
        try await drainOrdered(reader)
        #expect(second.value.count == 4, "nothing after cancel")
    }

    @Test func deleteAndTouchHelpers() async throws {
        let daemon = try TestDaemon()
        let client = try await connectedClient(daemon)
        defer { client.close() }
        let theme = Channel("app", "theme")
        #expect(try await client.set(["mode": "dark"], at: theme) == 1)
        let mirror = try await client.remoteValue([String: String].self, at: theme)
        #expect(try await client.touch(theme) == 1, "a touch changes nothing")
        let stale = await thrownError { () async throws(HeraldClientError) in try await client.delete(at: theme, ifRev: 0) }
        #expect(isServerError(stale, "conflict"))
        #expect(try await client.delete(at: theme, ifRev: 1) == 2)
        #expect(await eventually { mirror.current.rev == 2 && mirror.current.value == nil })
        let missing = await thrownError { () async throws(HeraldClientError) in try await client.touch(Channel("app", "none")) }
        #expect(isServerError(missing, "not_found"))
        let list = try await client.remoteList(Int.self, at: todo)
        _ = try await list.append(1)
        try await client.touch(todo)
        _ = try await list.append(2)
        #expect(await eventually { list.current.value == [1, 2] })
        #expect(list.resyncCount == 0, "a touch is not a change: no gap, no resync")
    }
}
