@testable import Herald
import HeraldTestSupport
import Testing

/// `CalculatedValue`: `map` and `combine` over remote values, cancellation and lifetime.
@Suite struct CalculatedValueTests {
    let theme = Channel("app", "theme")
    let size = Channel("app", "size")
    let user = Channel("app", "user")

    /// A mapped value is right on return and follows sets (and a delete) from another client.
    @Test func mapFollowsSetFromAnotherClient() async throws {
        let daemon = try TestDaemon()
        let writer = try await connectedClient(daemon)
        let reader = try await connectedClient(daemon)
        defer { writer.close(); reader.close() }
        try await writer.set(Theme(mode: "dark"), at: theme)
        let remote = try await reader.remoteValue(Theme.self, at: theme)

        let isDark = remote.map { $0.mode == "dark" }
        #expect(isDark.current == true, "seeded from the input's current value")
        let seen = LockedValue<[Bool?]>([])
        let observation = isDark.observe { dark in seen.withLock { $0.append(dark) } }
        #expect(await eventually { seen.value == [true] })

        try await writer.set(Theme(mode: "light"), at: theme)
        #expect(await eventually { seen.value == [true, false] })
        #expect(isDark.current == false)

        _ = try await writer.call("del", ["ch": RawJSON("\"app.theme\"")])
        #expect(await eventually { seen.value == [true, false, nil] })
        #expect(isDark.current == nil, "a deleted input has no value")
        withExtendedLifetime(observation) {}
    }

    /// `combine` is nil until both inputs hold a value, then follows either one.
    @Test func combineWaitsForEveryInputThenFollowsEither() async throws {
        let daemon = try TestDaemon()
        let writer = try await connectedClient(daemon)
        let reader = try await connectedClient(daemon)
        defer { writer.close(); reader.close() }
        let remoteTheme = try await reader.remoteValue(Theme.self, at: theme)
        let remoteSize = try await reader.remoteValue(Int.self, at: size)

        let label = combine(remoteTheme, remoteSize) { theme, size in "\(theme.mode) \(size)" }
        #expect(label.current == nil)
        let seen = LockedValue<[String?]>([])
        let observation = label.observe(alertNow: false) { text in seen.withLock { $0.append(text) } }

        try await writer.set(Theme(mode: "dark"), at: theme)
        #expect(await eventually { remoteTheme.current.rev == 1 })
        try await drainOrdered(reader)
        #expect(label.current == nil, "one input still has no value")

        try await writer.set(3, at: size)
        #expect(await eventually { label.current == "dark 3" })
        try await writer.set(Theme(mode: "light"), at: theme)
        #expect(await eventually { label.current == "light 3" })
        try await writer.set(4, at: size)
        #expect(await eventually { label.current == "light 4" })
        #expect(await eventually { seen.value.compactMap { $0 } == ["dark 3", "light 3", "light 4"] })
        #expect(seen.value.first == .some(nil), "the first change (theme only) still computes nil")

        // Three inputs, one of them on another client.
        try await writer.set("ann", at: user)
        let remoteUser = try await writer.remoteValue(String.self, at: user)
        let line = combine(remoteTheme, remoteSize, remoteUser) { theme, size, user in "\(user): \(theme.mode) \(size)" }
        #expect(line.current == "ann: light 4")
        try await writer.set("bob", at: user)
        #expect(await eventually { line.current == "bob: light 4" })
        withExtendedLifetime(observation) {}
    }

    /// A cancelled observation gets no more calls, while the value itself keeps following.
    @Test func cancellingStopsUpdates() async throws {
        let daemon = try TestDaemon()
        let writer = try await connectedClient(daemon)
        let reader = try await connectedClient(daemon)
        defer { writer.close(); reader.close() }
        try await writer.set(1, at: size)
        let remote = try await reader.remoteValue(Int.self, at: size)
        let doubled = remote.map { $0 * 2 }
        let seen = LockedValue<[Int?]>([])
        let observation = doubled.observe { value in seen.withLock { $0.append(value) } }
        #expect(await eventually { seen.value == [2] })

        try await writer.set(2, at: size)
        #expect(await eventually { seen.value == [2, 4] })
        observation.cancel()
        try await writer.set(3, at: size)
        #expect(await eventually { doubled.current == 6 })
        try await drainOrdered(reader)
        #expect(seen.value == [2, 4], "nothing after cancel")
    }

    /// Released, a calculated value is deallocated (its inputs' observers do not hold it) and
    /// its input observations are cancelled: the transform runs no more.
    @Test func releasedCalculatedValueIsDeallocated() async throws {
        let daemon = try TestDaemon()
        let writer = try await connectedClient(daemon)
        let reader = try await connectedClient(daemon)
        defer { writer.close(); reader.close() }
        let remote = try await reader.remoteValue(Int.self, at: size)
        let calls = LockedValue(0)
        weak var weakDoubled: CalculatedValue<Int>?
        do {
            let doubled = remote.map { value -> Int in
                calls.withLock { $0 += 1 }
                return value * 2
            }
            weakDoubled = doubled
            let observation = doubled.observe { _ in }
            #expect(remote.observerCount == 1)
            try await writer.set(5, at: size)
            #expect(await eventually { doubled.current == 10 })
            observation.cancel()
            #expect(doubled.observerCount == 0)
        }
        try await drainOrdered(reader)
        #expect(await eventually { weakDoubled == nil }, "no retain cycle through the input's observer")
        #expect(remote.observerCount == 0, "the input observation is cancelled")

        let before = calls.value
        try await writer.set(6, at: size)
        #expect(await eventually { remote.current.value == 6 })
        try await drainOrdered(reader)
        #expect(calls.value == before, "the transform runs no more")
    }
}
