import Foundation
@testable import Herald
import HeraldTestSupport
import Testing

/// Offline publishes and `post` backpressure (issue 38): kept while disconnected, sent after
/// the reconnect with an idempotency `id`, delivered once; bounded, overflow told to the caller.
@Suite struct OfflinePublishTests {
    private func keepingClient(_ daemon: TestDaemon, bound: OfflinePublishing = OfflinePublishing(),
                               alternate: TestDaemon? = nil) async throws -> HeraldClient {
        var configuration = ClientConfiguration(endpoint: .tcp(host: "127.0.0.1", port: daemon.port), name: "app",
                                                reconnect: ReconnectPolicy(initialDelay: 0.05, maxDelay: 0.3),
                                                alternateEndpoints: alternate.map { [.tcp(host: "127.0.0.1", port: $0.port)] } ?? [])
        configuration.offlinePublishing = bound
        let client = HeraldClient(configuration: configuration)
        try await client.connect()
        return client
    }

    /// Subscribes `client` to the chat lines, collecting their numbers.
    private func collect(_ client: HeraldClient, name: String = "lines") async throws -> (Subscription, LockedValue<[Int]>) {
        let got = LockedValue<[Int]>([])
        let token = try client.subscribe(ChatLine.self, options: SubscriptionOptions(name: name)) { line, _ in
            got.withLock { $0.append(line.n) }
        }
        try await token.ready()
        return (token, got)
    }

    @Test func keptPublishesAreDeliveredOnceAfterAKill9AndRestart() async throws {
        let daemon = try TestDaemon()
        let client = try await keepingClient(daemon)
        defer { client.close() }
        let errors = collectErrors(client)
        let states = recordStates(client)
        // The client hears itself (echo): its restored subscription goes out before the kept
        // publishes, in the same write, so it sees each of them.
        let (token, got) = try await collect(client)
        for n in 1...3 { try await client.publish(ChatLine(text: "online", n: n)) }
        #expect(await eventually { got.value == [1, 2, 3] })

        daemon.stop()
        #expect(await eventually { !client.connectionState.isConnected })
        for n in 4...999 { try client.post(ChatLine(text: "offline", n: n)) }
        let receipt = Task { try await client.publish(ChatLine(text: "offline, awaited", n: 1000)) }
        try daemon.restart()
        #expect(await reconnected(states))
        let answered = try await receipt.value
        #expect(answered.receivers == 1)
        #expect(await eventually(within: 20) { got.value.count >= 1000 }, "\(got.value.count)")
        try await drainOrdered(client)
        #expect(got.value == Array(1...1000), "each once, in order: \(got.value.count) events")
        #expect(token.isActive)
        #expect(!errors.value.contains { if case .server = $0 { true } else { false } }, "\(errors.value)")
        #expect(client.state.withLock { $0.outbox.entries.isEmpty }, "answered publishes are forgotten")
    }

    @Test func aPublishWhoseAnswerWasLostIsSentAgainAndDeliveredOnce() async throws {
        let daemon = try TestDaemon()
        let client = try await keepingClient(daemon)
        defer { client.close() }
        let subscriber = try await connectedClient(daemon, name: "reader")
        defer { subscriber.close() }
        let (token, got) = try await collect(subscriber)
        defer { withExtendedLifetime(token) {} }
        let states = recordStates(client)
        let errors = collectErrors(client)

        // Frozen, the daemon answers nothing: every post is sent and unanswered at the cut.
        daemon.pause()
        for n in 1...50 { try client.post(ChatLine(text: "in flight", n: n)) }
        try await Task.sleep(nanoseconds: 200_000_000)
        client.loop.cutConnection()
        daemon.resume()
        #expect(await reconnected(states))
        #expect(await eventually(within: 20) { got.value.count >= 50 }, "\(got.value.count), \(errors.value), \(states.value)")
        try await Task.sleep(nanoseconds: 300_000_000)
        #expect(got.value == Array(1...50), "the old connection's copies and the new ones, each once: \(got.value.count) events")
        #expect(await eventually { client.state.withLock { $0.outbox.entries.isEmpty } })
    }

    @Test func theOutboxIsBoundedAndOverflowIsToldToTheCaller() async throws {
        let daemon = try TestDaemon()
        let client = try await keepingClient(daemon, bound: OfflinePublishing(maxCount: 3, maxBytes: 400))
        defer { client.close() }
        let states = recordStates(client)
        daemon.stop()
        #expect(await eventually { !client.connectionState.isConnected })
        for n in 1...3 { try client.post(ChatLine(text: "kept", n: n)) }
        let full = HeraldClientError.offlineQueueFull(count: 3, bytes: 400)
        #expect(throws: full) { try client.post(ChatLine(text: "over the count", n: 4)) }
        let refused = await thrownError { () async throws(HeraldClientError) -> PublishReceipt in
            try await client.publish(ChatLine(text: "over the count, awaited", n: 5))
        }
        #expect(refused == full)

        try daemon.restart()
        #expect(await reconnected(states))
        #expect(await eventually { client.state.withLock { $0.outbox.entries.isEmpty } })
        // The byte bound: one publish larger than it is refused even with the outbox empty.
        daemon.stop()
        #expect(await eventually { !client.connectionState.isConnected })
        #expect(throws: full) { try client.post(ChatLine(text: String(repeating: "x", count: 500), n: 6)) }
        try client.post(ChatLine(text: "fits", n: 7))
    }

    @Test func tenThousandKeptPublishesCostLittleAndArriveOnce() async throws {
        let daemon = try TestDaemon()
        let client = try await keepingClient(daemon, bound: OfflinePublishing(maxCount: 10_000, maxBytes: 4 << 20))
        defer { client.close() }
        let states = recordStates(client)
        let errors = collectErrors(client)
        let (token, got) = try await collect(client)
        defer { withExtendedLifetime(token) {} }
        daemon.stop()
        #expect(await eventually { !client.connectionState.isConnected })
        for n in 1...10_000 { try client.post(ChatLine(text: "offline", n: n)) }
        #expect(throws: HeraldClientError.offlineQueueFull(count: 10_000, bytes: 4 << 20)) {
            try client.post(ChatLine(text: "one too many", n: 0))
        }
        try daemon.restart()
        #expect(await reconnected(states))
        #expect(await eventually(within: 60) { got.value.count >= 10_000 }, "\(got.value.count), \(errors.value.prefix(3))")
        try await drainOrdered(client)
        #expect(got.value == Array(1...10_000), "\(got.value.count) events")
    }

    @Test func postPastTheOutboundBoundThrowsAndWaitForRoomAwaitsTheNetwork() async throws {
        let daemon = try TestDaemon()
        var configuration = ClientConfiguration(endpoint: .tcp(host: "127.0.0.1", port: daemon.port))
        configuration.maxOutboundBytes = 64 << 10
        let client = HeraldClient(configuration: configuration)
        defer { client.close() }
        try await client.connect()
        let big = ChatLine(text: String(repeating: "x", count: 4096), n: 0)

        // Frozen, the daemon reads nothing: the kernel's buffers fill, then the client's. Each
        // refusal waits for room; once the kernel takes no more, the wait lasts.
        daemon.pause()
        var posted = 0
        var stuck: Task<Void, Error>?
        let waited = LockedValue(false)
        while stuck == nil, posted < 40_000 {
            do throws(HeraldClientError) {
                try client.post(big)
                posted += 1
            } catch {
                #expect(error == .outboundFull(bytes: 64 << 10))
                waited.withLock { $0 = false }
                let waiter = Task {
                    try await client.waitForOutboundRoom()
                    waited.withLock { $0 = true }
                }
                if await eventually(within: 1, { waited.value }) { continue }
                stuck = waiter
            }
        }
        let waiter = try #require(stuck, "the client's buffer never stayed full (\(posted) posts)")
        #expect(!waited.value, "no room while the daemon reads nothing")
        daemon.resume()
        try await waiter.value
        #expect(waited.value)
        try client.post(big)
    }
}
