import Foundation
@testable import Herald
import HeraldTestSupport
import Testing

/// The client through an app's life (issue 38): network path changes, background and
/// foreground, and the `restored` state, against a real `heraldd`.
@Suite struct NetworkLifeTests {
    /// A backoff far longer than any wait below: a reconnect seen in time came from path news.
    private static let slowBackoff = ReconnectPolicy(initialDelay: 60, maxDelay: 60)

    private func client(_ daemon: TestDaemon, monitor: ManualPathMonitor?,
                        reconnect: ReconnectPolicy = slowBackoff) async throws -> HeraldClient {
        let client = HeraldClient(configuration: ClientConfiguration(
            endpoint: .tcp(host: "127.0.0.1", port: daemon.port), reconnect: reconnect), pathMonitor: monitor)
        try await client.connect()
        return client
    }

    /// Whether `states` shows `state` after the last disconnect.
    private func seenSinceLoss(_ states: LockedValue<[ConnectionState]>, _ state: ConnectionState) -> Bool {
        let seen = states.value
        guard let lost = seen.lastIndex(where: { if case .disconnected = $0 { true } else { false } }) else { return false }
        return seen[lost...].contains(state)
    }

    @Test func aPathThatComesBackReconnectsWithoutWaitingOutTheBackoff() async throws {
        let daemon = try TestDaemon()
        let monitor = ManualPathMonitor()
        let client = try await client(daemon, monitor: monitor)
        defer { client.close() }
        let states = recordStates(client)
        let got = LockedValue<[Int]>([])
        let feed = try client.subscribe(ChatLine.self, options: SubscriptionOptions(name: "feed")) { line, _ in
            got.withLock { $0.append(line.n) }
        }
        try await feed.ready()

        monitor.send(.unsatisfied)
        client.loop.cutConnection()
        #expect(await eventually(within: 20) { seenSinceLoss(states, .waitingForNetwork) }, "\(states.value)")
        #expect(!states.value.contains(.reconnecting(attempt: 1)), "no attempt while there is no path")

        monitor.send(.satisfied)
        // The backoff alone would wait 30 to 60 s.
        #expect(await eventually(within: 20) { seenSinceLoss(states, .restored) }, "\(states.value)")
        let publisher = try await connectedClient(daemon, name: "pub")
        defer { publisher.close() }
        try await publisher.publish(ChatLine(text: "back", n: 1))
        #expect(await eventually { got.value == [1] })
    }

    @Test func noAttemptIsMadeWhileThereIsNoPath() async throws {
        let daemon = try TestDaemon()
        let monitor = ManualPathMonitor()
        // A fast backoff: without the path rule the client would be back within 100 ms.
        let client = try await client(daemon, monitor: monitor, reconnect: ReconnectPolicy(initialDelay: 0.05, maxDelay: 0.1))
        defer { client.close() }
        let states = recordStates(client)
        monitor.send(.unsatisfied)
        client.loop.cutConnection()
        #expect(await eventually(within: 20) { seenSinceLoss(states, .waitingForNetwork) }, "\(states.value)")
        try await Task.sleep(nanoseconds: 1_000_000_000)
        #expect(client.connectionState == .waitingForNetwork)
        #expect(!seenSinceLoss(states, .reconnecting(attempt: 1)), "\(states.value)")
        monitor.send(.satisfied)
        #expect(await eventually(within: 20) { seenSinceLoss(states, .restored) }, "\(states.value)")
    }

    @Test func withoutPathNewsTheBackoffDecides() async throws {
        let daemon = try TestDaemon()
        let client = try await client(daemon, monitor: ManualPathMonitor())
        defer { client.close() }
        let states = recordStates(client)
        client.loop.cutConnection()
        #expect(await eventually { states.value.contains { if case .disconnected = $0 { true } else { false } } })
        // The control for the test above: the same cut, no news, no reconnect for a while.
        try await Task.sleep(nanoseconds: 2_000_000_000)
        #expect(!seenSinceLoss(states, .connected), "\(states.value)")
    }

    @Test func aBetterPathMovesTheConnectionAtOnce() async throws {
        let daemon = try TestDaemon()
        let monitor = ManualPathMonitor()
        let client = try await client(daemon, monitor: monitor)
        defer { client.close() }
        let states = recordStates(client)
        let feed = try client.subscribe(raw: Channel("chat", "lobby"), options: SubscriptionOptions(name: "feed")) { _, _ in }
        try await feed.ready()
        let first = try #require(client.serverInfo?.client)

        client.loop.pathChanged(.betterPathAvailable)
        #expect(await eventually(within: 20) { seenSinceLoss(states, .restored) }, "\(states.value)")
        #expect(states.value.contains(.disconnected(.failure("moving to a better network path"))))
        #expect(client.serverInfo?.client != first, "a new connection")
        #expect(try await client.serverSubscriptions().map(\.sub) == ["feed"])
    }

    @Test func suspendClosesAndResumeCatchesUpWithSince() async throws {
        let daemon = try TestDaemon()
        let client = try await client(daemon, monitor: nil)
        defer { client.close() }
        let errors = collectErrors(client)
        let states = recordStates(client)
        let got = LockedValue<[Int]>([])
        let feed = try client.subscribe(ChatLine.self, options: SubscriptionOptions(name: "feed")) { line, _ in
            got.withLock { $0.append(line.n) }
        }
        try await feed.ready()
        let publisher = try await connectedClient(daemon, name: "pub")
        defer { publisher.close() }
        try await publisher.publish(ChatLine(text: "seen", n: 1))
        #expect(await eventually { got.value == [1] })

        client.suspend()
        #expect(await eventually { client.connectionState == .suspended })
        #expect(client.isSuspended)
        let refused = await thrownError { () async throws(HeraldClientError) -> PublishReceipt in
            try await client.publish(ChatLine(text: "x", n: 0))
        }
        #expect(refused == .notConnected)
        #expect(await eventuallyAsync { (try? await publisher.stats())?["connections"] == 1 }, "the suspended client's socket is closed")
        for n in 2...4 { try await publisher.publish(ChatLine(text: "while away", n: n)) }
        try await Task.sleep(nanoseconds: 300_000_000)
        #expect(client.connectionState == .suspended, "no reconnect while suspended")

        client.resume()
        #expect(await eventually(within: 20) { client.connectionState == .restored })
        #expect(await eventually { got.value == [1, 2, 3, 4] }, "caught up with since: \(got.value)")
        #expect(feed.recovered == true)
        #expect(errors.value.isEmpty, "\(errors.value)")
        // The recorder is a stream consumer of its own: it may lag behind `connectionState`.
        #expect(await eventually { states.value.suffix(3) == [.reconnecting(attempt: 1), .connected, .restored] }, "\(states.value)")
    }

    @Test func restoredFollowsConnectedOnTheFirstConnectionToo() async throws {
        let daemon = try TestDaemon()
        let client = HeraldClient(configuration: ClientConfiguration(endpoint: .tcp(host: "127.0.0.1", port: daemon.port)),
                                  pathMonitor: nil)
        defer { client.close() }
        let states = recordStates(client)
        let early = try client.subscribe(raw: Channel("chat", "lobby"), options: SubscriptionOptions(name: "early")) { _, _ in }
        try await client.connect()
        #expect(await eventually { states.value.contains(.restored) })
        #expect(states.value == [.disconnected(.notStarted), .connecting, .connected, .restored], "\(states.value)")
        #expect(early.isActive)
    }

    /// Polls an async condition every 20 ms for up to `seconds`.
    private func eventuallyAsync(within seconds: Double = 10, _ condition: () async -> Bool) async -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if await condition() { return true }
            try? await Task.sleep(nanoseconds: 20_000_000)
        }
        return false
    }
}
