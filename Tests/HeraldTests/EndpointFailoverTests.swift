import Foundation
@testable import Herald
import HeraldTestSupport
import Testing

/// A client given several endpoints (issue 15: "its clients reconnect to another node"):
/// when its node dies it connects to the next one and gets its subscriptions back, with the
/// events published meanwhile replayed from the cluster's history.
@Suite(.enabled(if: TestRedis.isAvailable, "needs Debian's redis-server"), .serialized)
struct EndpointFailoverTests {
    private func node(_ redis: TestRedis, _ name: String) throws -> TestDaemon {
        try TestDaemon(config: #"cluster: { redis: "redis://127.0.0.1:\#(redis.port)", node: "\#(name)", node_timeout_ms: 1000 },"#)
    }

    @Test func aClientFailsOverToTheNextNodeWithItsSubscriptionsAndNoGap() async throws {
        let redis = try TestRedis()
        let first = try node(redis, "a")
        let second = try node(redis, "b")
        let client = HeraldClient(configuration: ClientConfiguration(
            endpoint: .tcp(host: "127.0.0.1", port: first.port), reconnect: ReconnectPolicy(initialDelay: 0.05, maxDelay: 0.5),
            alternateEndpoints: [.tcp(host: "127.0.0.1", port: second.port)]))
        defer { client.close() }
        try await client.connect()
        let errors = collectErrors(client)
        let states = recordStates(client)
        let seen = LockedValue<[Int]>([])
        let lines = try client.subscribe(ChatLine.self) { line, _ in seen.withLock { $0.append(line.n) } }
        try await lines.ready()
        let publisher = try await connectedClient(second, name: "pub")
        defer { publisher.close() }
        for n in 1...3 { try await publisher.publish(ChatLine(text: "before", n: n)) }
        #expect(await eventually { seen.value == [1, 2, 3] })

        first.stop()
        for n in 4...6 { try await publisher.publish(ChatLine(text: "meanwhile", n: n)) }
        #expect(await reconnected(states))
        #expect(client.serverInfo?.node == "b", "connected to the other node")
        for n in 7...8 { try await publisher.publish(ChatLine(text: "after", n: n)) }
        #expect(await eventually { seen.value.count >= 8 })
        #expect(seen.value == Array(1...8), "replayed from the cluster's history, each once, in order")
        #expect(!errors.value.contains { if case .historyLost = $0 { true } else { false } }, "\(errors.value)")
    }

    @Test func endpointsAreTriedInOrderFromTheFirst() {
        let configuration = ClientConfiguration(endpoint: .unix(path: "/a"), alternateEndpoints: [.unix(path: "/b"), .unix(path: "/c")])
        #expect(configuration.endpoints == [.unix(path: "/a"), .unix(path: "/b"), .unix(path: "/c")])
        #expect(ClientConfiguration(endpoint: .unix(path: "/a")).endpoints == [.unix(path: "/a")])
    }
}
