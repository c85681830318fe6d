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
}
