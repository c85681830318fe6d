import Foundation
import Herald
import HeraldTestSupport
import Testing

@Suite struct PublishSubscribeTests {
    @Test func connectsAndKnowsTheDaemon() async throws {
        let daemon = try TestDaemon()
        let client = try await connectedClient(daemon)
        defer { client.close() }
        #expect(client.connectionState.isConnected)
        #expect(client.serverInfo?.server == "heraldd")
        #expect(try await client.ping() > 0)
    }

    @Test func connectsOverUnixSocket() async throws {
        let daemon = try TestDaemon()
        let client = HeraldClient(unixPath: daemon.unixPath)
        defer { client.close() }
        try await client.connect()
        let receipt = try await client.publish(raw: RawJSON("1"), to: Channel("unix", "test"))
        #expect(receipt.seq == 1)
    }

    @Test func connectFailureThrowsAndDoesNotRetry() async throws {
        let client = HeraldClient(configuration: ClientConfiguration(endpoint: .unix(path: "/tmp/herald-no-such.sock")))
        await #expect(throws: HeraldClientError.self) { try await client.connect() }
        #expect(!client.connectionState.isConnected)
    }

    @Test func typedEventArrivesWithMetadata() async throws {
        let daemon = try TestDaemon()
        let client = try await connectedClient(daemon)
        defer { client.close() }
        let got = LockedValue<[(ChatLine, EventMetadata)]>([])
        let sub = try client.subscribe(ChatLine.self) { line, meta in got.withLock { $0.append((line, meta)) } }
        try await sub.ready()
        let receipt = try await client.publish(ChatLine(text: "hi", n: 1))
        #expect(receipt == PublishReceipt(seq: 1, receivers: 1))
        #expect(await eventually { got.value.count == 1 })
        let (line, meta) = try #require(got.value.first)
        #expect(line == ChatLine(text: "hi", n: 1))
        #expect(meta.channel == ChatLine.channel)
        #expect(meta.seq == 1)
        #expect(meta.sender == client.serverInfo?.client)
        #expect(meta.subscription == sub.name)
    }

    @Test func instanceTopicIsCoveredByTheTypesPattern() async throws {
        let daemon = try TestDaemon()
        let client = try await connectedClient(daemon)
        defer { client.close() }
        let got = LockedValue<[String]>([])
        let all = try client.subscribe(CarMoved.self) { _, meta in got.withLock { $0.append("all:" + meta.channel.name) } }
        let one = try client.subscribe(Car.moved(id: 42)) { moved, _ in got.withLock { $0.append("42:\(moved.x)") } }
        try await all.ready()
        try await one.ready()
        try await client.publish(CarMoved(x: 7), to: Car.moved(id: 42))
        try await client.publish(CarMoved(x: 8), to: Car.moved(id: 43))
        #expect(await eventually { got.value.count == 3 })
        #expect(Set(got.value) == ["all:car.42.moved", "42:7", "all:car.43.moved"])
    }

    @Test func publishingToAPatternOrBadNameThrowsWithoutSending() async throws {
        let daemon = try TestDaemon()
        let client = try await connectedClient(daemon)
        defer { client.close() }
        await #expect(throws: HeraldClientError.self) { try await client.publish(CarMoved(x: 1)) }
        #expect(throws: HeraldClientError.self) { try client.post(raw: nil, to: Channel("a", "b.c", "")) }
        #expect(throws: HeraldClientError.self) { _ = try client.subscribe(raw: Channel(verbatim: "a..b")) { _, _ in } }
    }

    @Test func daemonErrorIsThrownWithItsCode() async throws {
        let daemon = try TestDaemon()
        let client = try await connectedClient(daemon)
        defer { client.close() }
        do {
            try await client.publish(raw: RawJSON("1"), to: Channel("$sys", "x"))
            Issue.record("publishing to $sys should fail")
        } catch .server(let code, _, let op) {
            #expect(code == "forbidden")
            #expect(op == "pub")
        }
    }

    @Test func undecodableEventGoesToTheErrorHandler() async throws {
        let daemon = try TestDaemon()
        let client = try await connectedClient(daemon)
        defer { client.close() }
        let errors = collectErrors(client)
        let got = LockedValue(0)
        let sub = try client.subscribe(ChatLine.self) { _, _ in got.withLock { $0 += 1 } }
        try await sub.ready()
        try await client.publish(raw: RawJSON(#"{"wrong":true}"#), to: ChatLine.channel)
        try await client.publish(ChatLine(text: "ok", n: 2))
        #expect(await eventually { got.value == 1 })
        #expect(await eventually { errors.value.contains { if case .decoding = $0 { true } else { false } } })
        #expect(sub.isActive)
    }

    @Test func postIsFireAndForgetAndItsErrorIsReported() async throws {
        let daemon = try TestDaemon()
        let client = try await connectedClient(daemon)
        defer { client.close() }
        let errors = collectErrors(client)
        let got = LockedValue(0)
        let sub = try client.subscribe(ChatLine.self) { _, _ in got.withLock { $0 += 1 } }
        try await sub.ready()
        try client.post(ChatLine(text: "a", n: 1))
        try client.post(raw: RawJSON("1"), to: Channel("$sys", "nope"))
        #expect(await eventually { got.value == 1 })
        #expect(await eventually { errors.value.contains(where: { if case .server(code: "forbidden", _, _) = $0 { true } else { false } }) })
    }

    @Test func statsAndChannelsAnswer() async throws {
        let daemon = try TestDaemon()
        let client = try await connectedClient(daemon)
        defer { client.close() }
        try await client.publish(ChatLine(text: "a", n: 1))
        let stats = try await client.stats()
        #expect(stats["connections"] == 1)
        #expect(stats["msgs_in"] >= 2)
        let channels = try await client.channels(matching: Channel("chat", .rest))
        #expect(channels.map(\.ch) == ["chat.lobby"])
        #expect(channels.first?.seq == 1)
    }
}
