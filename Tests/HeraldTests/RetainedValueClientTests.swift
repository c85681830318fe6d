import Herald
import HeraldTestSupport
import Testing

/// The client's retained-value calls against the daemon that now serves them.
@Suite struct RetainedValueClientTests {
    @Test func setThenGetRoundTripsATypedValue() async throws {
        let daemon = try TestDaemon()
        let client = try await connectedClient(daemon)
        defer { client.close() }
        let counter = Channel("app", "count")
        #expect(try await client.get(Int.self, at: counter).rev == 0, "never set")
        try await client.set(5, at: counter)
        let first = try await client.get(Int.self, at: counter)
        #expect(first.value == 5)
        #expect(first.rev == 1)
        try await client.set(6, at: counter)
        let second = try await client.get(Int.self, at: counter)
        #expect(second.value == 6)
        #expect(second.rev == 2)
        #expect(try await client.ping() > 0)
    }
}
