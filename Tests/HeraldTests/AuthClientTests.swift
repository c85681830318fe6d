import Foundation
import Herald
import HeraldTestSupport
import Testing

/// The Swift client against a daemon with users: `ClientConfiguration.token` goes in `hello`.
@Suite struct AuthClientTests {
    private static let config = """
        auth: { users: [ { name: "app", token: "app-secret", publish: { allow: ["app.>"] } } ] }
        """

    private func client(_ daemon: TestDaemon, token: String?) -> HeraldClient {
        HeraldClient(configuration: ClientConfiguration(
            endpoint: .tcp(host: "127.0.0.1", port: daemon.port), name: "auth-test", token: token, reconnect: .never))
    }

    @Test func goodTokenConnectsAndWorksWithinItsPermissions() async throws {
        let daemon = try TestDaemon(config: Self.config)
        let client = client(daemon, token: "app-secret")
        defer { client.close() }
        try await client.connect()
        try await client.publish(raw: RawJSON("1"), to: Channel("app", "x"))
        do {
            try await client.publish(raw: RawJSON("1"), to: Channel("other", "x"))
            Issue.record("publishing outside the allow list succeeded")
        } catch {
            guard case .server(let code, _, _) = error else {
                Issue.record("expected a server error, got \(error)")
                return
            }
            #expect(code == "forbidden")
        }
    }

    @Test func badTokenFailsConnectWithAClearError() async throws {
        let daemon = try TestDaemon(config: Self.config)
        let client = client(daemon, token: "wrong")
        defer { client.close() }
        do {
            try await client.connect()
            Issue.record("connect with a wrong token succeeded")
        } catch {
            let text = String(describing: error)
            #expect(text.contains("forbidden"), "the error says why: \(text)")
        }
    }

    @Test func missingTokenFailsConnectWithAClearError() async throws {
        let daemon = try TestDaemon(config: Self.config)
        let client = client(daemon, token: nil)
        defer { client.close() }
        do {
            try await client.connect()
            Issue.record("connect without a token succeeded")
        } catch {
            let text = String(describing: error)
            #expect(text.contains("auth_required"), "the error says why: \(text)")
        }
    }

    @Test func tokenRevokedByReloadStopsReconnectingWithAuthRejected() async throws {
        let daemon = try TestDaemon(config: Self.config)
        let client = HeraldClient(configuration: ClientConfiguration(
            endpoint: .tcp(host: "127.0.0.1", port: daemon.port), token: "app-secret",
            reconnect: ReconnectPolicy(initialDelay: 0.05, maxDelay: 0.1)))
        defer { client.close() }
        try await client.connect()
        let states = LockedValue<[ConnectionState]>([])
        let watcher = Task {
            for await state in client.stateUpdates() { states.withLock { $0.append(state) } }
        }
        defer { watcher.cancel() }
        try daemon.reload(config: #"auth: { users: [ { name: "app", token: "new-secret" } ] }"#)
        let rejected = await eventually(within: 15) {
            states.withLock { $0.contains { if case .disconnected(.authRejected(code: "forbidden", _)) = $0 { true } else { false } } }
        }
        #expect(rejected, "states seen: \(states.withLock { $0 })")
        // Backoff is at most 0.1 s: a client still retrying would show new attempts by now.
        try await Task.sleep(nanoseconds: 800_000_000)
        let last = states.withLock { $0.last }
        if case .disconnected(.authRejected) = last {} else {
            Issue.record("the client kept reconnecting after its token was refused: \(states.withLock { $0 })")
        }
    }

    @Test func subscriptionRevokedByReloadEndsAsForbidden() async throws {
        let daemon = try TestDaemon(config: #"auth: { users: [ { name: "app", token: "t", subscribe: { allow: ["app.>", "news.>"] } } ] }"#)
        let client = client(daemon, token: "t")
        defer { client.close() }
        try await client.connect()
        let kept = try client.subscribe(raw: Channel("app", "x")) { _, _ in }
        let revoked = try client.subscribe(raw: Channel("news", "today")) { _, _ in }
        try await kept.ready()
        try await revoked.ready()
        try daemon.reload(config: #"auth: { users: [ { name: "app", token: "t", subscribe: { allow: ["app.>"] } } ] }"#)
        let end = try await revoked.ended()
        #expect(end == .forbidden(pattern: "news.today"))
        #expect(client.connectionState.isConnected)
        #expect(kept.isActive)
    }
}
