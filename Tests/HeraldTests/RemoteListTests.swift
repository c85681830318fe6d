import Herald
import HeraldTestSupport
import Testing

/// `RemoteList`: mirroring list changes, and fetching again after a missed change.
@Suite struct RemoteListTests {
    let todo = Channel("app", "todo")

    private func op(_ client: HeraldClient, _ op: String, _ fields: KeyValuePairs<String, RawJSON>) async throws {
        var all: [(String, RawJSON)] = [("ch", RawJSON("\"app.todo\""))]
        all.append(contentsOf: fields.map { ($0.key, $0.value) })
        switch all.count {
        case 1: _ = try await client.call(op, [all[0].0: all[0].1])
        case 2: _ = try await client.call(op, [all[0].0: all[0].1, all[1].0: all[1].1])
        case 3: _ = try await client.call(op, [all[0].0: all[0].1, all[1].0: all[1].1, all[2].0: all[2].1])
        case 4: _ = try await client.call(op, [all[0].0: all[0].1, all[1].0: all[1].1, all[2].0: all[2].1, all[3].0: all[3].1])
        default: Issue.record("op helper takes at most three fields")
        }
    }

    /// Starting from `current`, every change by another client (append, splice, assign, del,
    /// set) leaves the mirror equal to the daemon's list, and observers see each rev.
    @Test func mirrorFollowsEveryListChange() async throws {
        let daemon = try TestDaemon()
        let writer = try await connectedClient(daemon)
        let reader = try await connectedClient(daemon)
        defer { writer.close(); reader.close() }
        try await op(writer, "append", ["value": RawJSON("\"milk\"")])
        let list = try await reader.remoteList(String.self, at: todo)
        #expect(list.current.value == ["milk"])
        #expect(list.current.rev == 1)
        let revs = LockedValue<[Int]>([])
        let observation = list.observe { _, rev in revs.withLock { $0.append(rev) } }

        try await op(writer, "splice", ["index": RawJSON("0"), "remove": RawJSON("0"), "insert": RawJSON(#"["eggs","tea"]"#)])
        try await op(writer, "assign", ["index": RawJSON("1"), "value": RawJSON("\"coffee\"")])
        try await op(writer, "append", ["value": RawJSON("\"jam\"")])
        try await op(writer, "splice", ["index": RawJSON("1"), "remove": RawJSON("2")])
        #expect(await eventually { list.current.rev == 5 })
        #expect(list.current.value == ["eggs", "jam"])
        #expect(list.current.value == (try await writer.get([String].self, at: todo).value))

        try await op(writer, "del", [:])
        #expect(await eventually { list.current.rev == 6 && list.current.value == [] })
        try await writer.set(["x", "y"], at: todo)
        #expect(await eventually { list.current.value == ["x", "y"] && list.current.rev == 7 })
        #expect(await eventually { revs.value == [1, 2, 3, 4, 5, 6, 7] })
        #expect(list.resyncCount == 0, "nothing was missed")
        withExtendedLifetime(observation) {}
    }

    /// A missed change (here suppressed by a lock) shows as a rev gap: the mirror fetches the
    /// list again and ends equal to the daemon's.
    @Test func revGapResyncsWithGet() async throws {
        let daemon = try TestDaemon()
        let writer = try await connectedClient(daemon)
        let reader = try await connectedClient(daemon)
        defer { writer.close(); reader.close() }
        let list = try await reader.remoteList(Int.self, at: todo)
        #expect(list.current.rev == 0)
        #expect(list.current.value == [])

        try await reader.lock(todo)
        try await op(writer, "append", ["value": RawJSON("1")])
        try await op(writer, "append", ["value": RawJSON("2")])
        try await reader.unlock(todo)
        try await op(writer, "append", ["value": RawJSON("3")])
        #expect(await eventually { list.current.rev == 3 })
        #expect(list.current.value == [1, 2, 3])
        #expect(list.resyncCount == 1)
    }

    /// The mirror's own writes: append, splice, assign reach the daemon and come back into the
    /// mirror; a stale `ifRev` is a conflict carrying the current rev and changes nothing.
    @Test func writesThroughTheMirrorWithCompareAndSet() async throws {
        let daemon = try TestDaemon()
        let client = try await connectedClient(daemon)
        defer { client.close() }
        let list = try await client.remoteList(String.self, at: todo)
        #expect(try await list.append("a", ifRev: 0) == 1)
        #expect(try await list.append("b") == 2)
        #expect(try await list.splice(at: 0, remove: 1, insert: ["x", "y"]) == 3)
        #expect(try await list.assign("z", at: 2) == 4)
        await #expect(throws: HeraldClientError.conflict(channel: "app.todo", rev: 4)) {
            try await list.append("late", ifRev: 1)
        }
        #expect(await eventually { list.current.rev == 4 })
        #expect(list.current.value == ["x", "y", "z"])
        #expect(try await client.get([String].self, at: todo).value == ["x", "y", "z"])
    }
}
