import Foundation
import Herald
import HeraldTestSupport
import Testing

/// Issue 17, "Connect": an app launched before the daemon (or offline) no longer needs its own
/// retry loop; subscriptions made before the first connection are sent once it succeeds.
@Suite struct FirstConnectTests {
    @Test func connectWaitsForTheDaemonAndRestoresEarlierSubscriptions() async throws {
        let daemon = try TestDaemon()
        daemon.stop()
        let client = HeraldClient(configuration: ClientConfiguration(
            endpoint: .tcp(host: "127.0.0.1", port: daemon.port), reconnect: ReconnectPolicy(initialDelay: 0.05, maxDelay: 0.2)))
        defer { client.close() }
        let states = recordStates(client)
        let received = LockedValue<[String]>([])
        let token = try client.subscribe(raw: Channel("boot", "news")) { data, _ in
            received.withLock { $0.append(data?.description ?? "nil") }
        }
        let connecting = Task { () async -> HeraldClientError? in
            do throws(HeraldClientError) {
                try await client.connect(waitsForConnectivity: true)
                return nil
            } catch {
                return error
            }
        }
        // Several refused attempts, retried with the reconnect backoff.
        #expect(await eventually { states.value.contains(.reconnecting(attempt: 2)) })
        try daemon.restart()
        #expect(await connecting.value == nil)
        #expect(client.connectionState.isConnected)
        try await token.ready()
        let publisher = try await connectedClient(daemon, name: "publisher")
        defer { publisher.close() }
        try await publisher.publish(raw: RawJSON("\"up\""), to: Channel("boot", "news"))
        #expect(await eventually { received.value == ["\"up\""] })
    }

    @Test func connectWithoutWaitingStillFailsAtOnce() async throws {
        let daemon = try TestDaemon()
        daemon.stop()
        let client = HeraldClient(port: daemon.port)
        defer { client.close() }
        let states = recordStates(client)
        let error = await thrownError { () async throws(HeraldClientError) in try await client.connect() }
        guard case .connectionFailed? = error else {
            Issue.record("expected connectionFailed, got \(String(describing: error))")
            return
        }
        try await Task.sleep(nanoseconds: 300_000_000)
        #expect(!states.value.contains { if case .reconnecting = $0 { true } else { false } }, "no retry: \(states.value)")
    }

    @Test func waitingConnectGivesUpAfterThePolicysAttempts() async throws {
        let daemon = try TestDaemon()
        daemon.stop()
        let client = HeraldClient(configuration: ClientConfiguration(
            endpoint: .tcp(host: "127.0.0.1", port: daemon.port),
            reconnect: ReconnectPolicy(initialDelay: 0.02, maxDelay: 0.05, maxAttempts: 3)))
        defer { client.close() }
        let error = await thrownError { () async throws(HeraldClientError) in try await client.connect(waitsForConnectivity: true) }
        guard case .connectionFailed? = error else {
            Issue.record("expected connectionFailed, got \(String(describing: error))")
            return
        }
    }
}
