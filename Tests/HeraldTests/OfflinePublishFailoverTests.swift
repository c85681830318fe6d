import Foundation
@testable import Herald
import HeraldTestSupport
import Testing

/// Offline publishes across a cluster failover (issue 38): kept while the client's node is
/// gone, sent to the next node with their idempotency `id`s, delivered once.
///
/// Needs `pub` with `id` in cluster mode (issue 37, item 4): until the cluster takes it, the
/// node answers `unavailable` and this test fails on purpose.
@Suite(.enabled(if: TestRedis.isAvailable, "needs Debian's redis-server"), .serialized)
struct OfflinePublishFailoverTests {
    private func node(_ redis: TestRedis, _ name: String) throws -> TestDaemon {
        try TestDaemon(config: #"cluster: { redis: "redis://127.0.0.1:\#(redis.port)", node: "\#(name)", node_timeout_ms: 1000 },"#)
    }

    @Test func keptPublishesAreDeliveredOnceAfterAFailover() async throws {
        let redis = try TestRedis()
        let first = try node(redis, "a")
        let second = try node(redis, "b")
        var configuration = ClientConfiguration(
            endpoint: .tcp(host: "127.0.0.1", port: first.port), name: "app", reconnect: ReconnectPolicy(initialDelay: 0.05, maxDelay: 0.5),
            alternateEndpoints: [.tcp(host: "127.0.0.1", port: second.port)])
        configuration.offlinePublishing = OfflinePublishing()
        let client = HeraldClient(configuration: configuration)
        defer { client.close() }
        try await client.connect()
        let errors = collectErrors(client)
        let states = recordStates(client)
        let reader = try await connectedClient(second, name: "reader")
        defer { reader.close() }
        let got = LockedValue<[Int]>([])
        let token = try reader.subscribe(ChatLine.self) { line, _ in got.withLock { $0.append(line.n) } }
        try await token.ready()
        for n in 1...3 { try await client.publish(ChatLine(text: "before", n: n)) }
        #expect(await eventually { got.value == [1, 2, 3] })

        // Posted in flight and while the client looks for the next node.
        for n in 4...10 { try client.post(ChatLine(text: "in flight", n: n)) }
        first.stop()
        for n in 11...20 { try client.post(ChatLine(text: "failing over", n: n)) }
        #expect(await reconnected(states))
        #expect(client.serverInfo?.node == "b")
        #expect(await eventually(within: 20) { got.value.count >= 20 }, "\(got.value)")
        try await Task.sleep(nanoseconds: 300_000_000)
        #expect(got.value == Array(1...20), "each once, in order")
        #expect(!errors.value.contains { if case .server = $0 { true } else { false } }, "\(errors.value)")
    }
}
