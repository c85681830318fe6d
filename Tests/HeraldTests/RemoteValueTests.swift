import Herald
import HeraldTestSupport
import Testing

/// A retained theme, mirrored by `RemoteValue`.
struct Theme: Codable, Sendable, Equatable {
    var mode: String
}

/// `RemoteValue`: alert-now, observing other clients' sets, compare-and-set.
@Suite struct RemoteValueTests {
    let channel = Channel("app", "theme")

    /// The mirror holds the current value on return, and an observer gets it at once.
    @Test func alertNowDeliversTheCurrentValue() async throws {
        let daemon = try TestDaemon()
        let writer = try await connectedClient(daemon)
        let reader = try await connectedClient(daemon)
        defer { writer.close(); reader.close() }
        try await writer.set(Theme(mode: "dark"), at: channel)

        let theme = try await reader.remoteValue(Theme.self, at: channel)
        #expect(theme.current.value == Theme(mode: "dark"))
        #expect(theme.current.rev == 1)
        let seen = LockedValue<[Int]>([])
        let quiet = LockedValue<[Int]>([])
        let observation = theme.observe { value, rev in
            if value == Theme(mode: "dark") { seen.withLock { $0.append(rev) } }
        }
        let later = theme.observe(alertNow: false) { _, rev in quiet.withLock { $0.append(rev) } }
        #expect(await eventually { seen.value == [1] })
        try await drainOrdered(reader)
        #expect(quiet.value.isEmpty, "alertNow:false waits for a change")
        withExtendedLifetime((observation, later)) {}

        // An unset channel mirrors as nil at rev 0, and alert-now says so too.
        let empty = try await reader.remoteValue(Theme.self, at: Channel("app", "unset"))
        #expect(empty.current.value == nil)
        #expect(empty.current.rev == 0)
        let nothing = LockedValue<[Int]>([])
        let emptyObservation = empty.observe { value, rev in if value == nil { nothing.withLock { $0.append(rev) } } }
        #expect(await eventually { nothing.value == [0] })
        withExtendedLifetime(emptyObservation) {}
    }

    /// A set from another client reaches the mirror and its observers, in rev order; a
    /// cancelled observation gets nothing more.
    @Test func setFromAnotherClientIsObserved() async throws {
        let daemon = try TestDaemon()
        let writer = try await connectedClient(daemon)
        let reader = try await connectedClient(daemon)
        defer { writer.close(); reader.close() }
        let theme = try await reader.remoteValue(Theme.self, at: channel)
        let seen = LockedValue<[String]>([])
        let observation = theme.observe { value, rev in seen.withLock { $0.append("\(value?.mode ?? "nil")@\(rev)") } }
        try await writer.set(Theme(mode: "dark"), at: channel)
        try await writer.set(Theme(mode: "light"), at: channel)
        #expect(await eventually { seen.value == ["nil@0", "dark@1", "light@2"] })
        #expect(theme.current.value == Theme(mode: "light"))

        _ = try await writer.call("del", ["ch": RawJSON("\"app.theme\"")])
        #expect(await eventually { seen.value.last == "nil@3" })
        #expect(theme.current.value == nil)

        observation.cancel()
        try await writer.set(Theme(mode: "blue"), at: channel)
        #expect(await eventually { theme.current.rev == 4 })
        try await drainOrdered(reader)
        #expect(seen.value.count == 4, "nothing after cancel")
    }

    /// Compare-and-set: a stale `ifRev` is a typed conflict carrying the current rev, and
    /// changes nothing; the current rev succeeds.
    @Test func compareAndSetConflictCarriesTheCurrentRev() async throws {
        let daemon = try TestDaemon()
        let writer = try await connectedClient(daemon)
        let reader = try await connectedClient(daemon)
        defer { writer.close(); reader.close() }
        let theme = try await reader.remoteValue(Theme.self, at: channel)
        #expect(try await theme.set(Theme(mode: "dark"), ifRev: 0) == 1)
        #expect(theme.current.rev == 1, "the mirror holds its own set at once")
        try await writer.set(Theme(mode: "light"), at: channel)

        await #expect(throws: HeraldClientError.conflict(channel: "app.theme", rev: 2)) {
            try await theme.set(Theme(mode: "red"), ifRev: 1)
        }
        #expect(try await reader.get(Theme.self, at: channel).value == Theme(mode: "light"), "a refused set changes nothing")
        #expect(try await theme.set(Theme(mode: "red"), ifRev: 2) == 3)
        #expect(await eventually { theme.current.value == Theme(mode: "red") && theme.current.rev == 3 })
    }
}
