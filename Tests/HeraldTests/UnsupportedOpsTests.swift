import Herald
import HeraldTestSupport
import Testing

/// The client side of ops today's heraldd does not implement (retained values, being built on
/// another branch): they fail cleanly with `unknown_op`, and the connection keeps working.
@Suite struct UnsupportedOpsTests {
    @Test func opsTheDaemonLacksThrowUnknownOpAndTheConnectionLives() async throws {
        let daemon = try TestDaemon()
        let client = try await connectedClient(daemon)
        defer { client.close() }
        let calls: [(String, () async throws(HeraldClientError) -> Void)] = [
            ("set", { () async throws(HeraldClientError) in try await client.set(5, at: Channel("app", "count")) }),
            ("get", { () async throws(HeraldClientError) in _ = try await client.get(Int.self, at: Channel("app", "count")) }),
        ]
        for (op, call) in calls {
            do {
                try await call()
                Issue.record("\(op) unexpectedly succeeded")
            } catch {
                #expect(error.isUnsupportedByDaemon, "\(op): \(error)")
            }
        }
        #expect(try await client.ping() > 0)
    }
}
