@testable import Herald
import HeraldTestSupport
import Testing

/// Signal handlers and retained-value mirrors across a lost connection.
@Suite struct SignalAndStateReconnectTests {
    private func waitForReconnect(_ states: LockedValue<[ConnectionState]>) async -> Bool {
        await eventually(within: 20) {
            let seen = states.value
            guard let lost = seen.lastIndex(where: { if case .disconnected = $0 { true } else { false } }) else { return false }
            return seen[lost...].contains(.connected)
        }
    }

    /// After a reconnect the handler is a handler again (`handle:true` restored), and the
    /// mirror took the value set while it was away (`current:true` restored); neither is
    /// reported as having lost history.
    @Test func handlerAndMirrorAreRestored() async throws {
        let daemon = try TestDaemon()
        let client = try await connectedClient(daemon)
        let other = try await connectedClient(daemon)
        defer { client.close(); other.close() }
        let errors = collectErrors(client)
        let states = recordStates(client)
        let handler = try client.handle(raw: Channel("app"), options: SubscriptionOptions(name: "top")) { _, _ in .stop }
        try await handler.ready()
        let theme = try await client.remoteValue(Theme.self, at: Channel("app", "theme"))

        client.loop.cutConnection()
        try await other.set(Theme(mode: "away"), at: Channel("app", "theme"))
        #expect(await waitForReconnect(states))
        #expect(await eventually { theme.current.value == Theme(mode: "away") && theme.current.rev == 1 })
        #expect(await eventually { handler.isActive })

        let result = try await other.signal(raw: nil, on: Channel("app", "x"), timeout: .seconds(30)).result()
        let me = try #require(client.serverInfo?.client)
        #expect(result.handledBy == "\(me)/top")
        #expect(!errors.value.contains { if case .historyLost = $0 { true } else { false } })
    }
}
