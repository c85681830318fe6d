import Foundation
@testable import Herald
@testable import HeraldExamples
import HeraldTestSupport
import Testing

/// `since` on subscribe, and `recovered:false` surfaced when history cannot reach back.
@Suite struct CatchUpTests {
    /// A daemon keeping two events per channel, with lines 1…5 published on chat.lobby.
    private func daemonWithFiveLines() async throws -> (TestDaemon, HeraldClient) {
        let daemon = try TestDaemon(config: "history: 2")
        let publisher = try await connectedClient(daemon, name: "pub")
        for n in 1...5 { try await publisher.publish(ChatLine(text: "line", n: n)) }
        return (daemon, publisher)
    }

    @Test func sinceReplaysHistoryAndSaysWhenItReachedBack() async throws {
        let (daemon, publisher) = try await daemonWithFiveLines()
        defer { publisher.close() }
        let client = try await connectedClient(daemon)
        defer { client.close() }
        let errors = collectErrors(client)

        let recent = LockedValue<[Int]>([])
        let full = try await resumeChat(client, after: 3) { line, replayed in recent.withLock { $0.append(replayed ? line.n : -line.n) } }
        #expect(full.recovered == true, "history holds 4 and 5")
        #expect(await eventually { recent.value == [4, 5] })

        let old = LockedValue<[Int]>([])
        let partial = try await resumeChat(client, after: 0) { line, replayed in old.withLock { $0.append(replayed ? line.n : -line.n) } }
        #expect(partial.recovered == false, "lines 1…3 are gone")
        #expect(await eventually { old.value == [4, 5] }, "what history holds is still replayed")
        #expect(await eventually { errors.value.contains(.historyLost(subscription: partial.name, channel: "chat.lobby")) })
        #expect(!errors.value.contains(.historyLost(subscription: full.name, channel: "chat.lobby")))

        try await publisher.publish(ChatLine(text: "live", n: 6))
        #expect(await eventually { recent.value == [4, 5, -6] && old.value == [4, 5, -6] }, "then live events")
        withExtendedLifetime((full, partial)) {}
    }

    @Test func sinceNeedsAConcreteChannelAndASeq() throws {
        let client = HeraldClient(port: 1)
        defer { client.close() }
        #expect(throws: HeraldClientError.self) {
            _ = try client.subscribe(CarMoved.self, options: SubscriptionOptions(since: 1)) { _, _ in }
        }
        #expect(throws: HeraldClientError.self) {
            _ = try client.subscribe(ChatLine.self, options: SubscriptionOptions(since: -1)) { _, _ in }
        }
    }

    /// After a reconnect to the same daemon, history too short for what was missed: the
    /// subscription says `recovered == false` and the error handler gets `historyLost`.
    @Test func reconnectPastTheHistorySurfacesRecoveredFalse() async throws {
        let (daemon, publisher) = try await daemonWithFiveLines()
        defer { publisher.close() }
        // A slow first retry (0.5…1 s) leaves time to publish while the client is away.
        let client = try await connectedClient(daemon, reconnect: ReconnectPolicy(initialDelay: 1, maxDelay: 2))
        defer { client.close() }
        let errors = collectErrors(client)
        let states = recordStates(client)
        let got = LockedValue<[Int]>([])
        let token = try client.subscribe(ChatLine.self, options: SubscriptionOptions(name: "chat")) { line, _ in got.withLock { $0.append(line.n) } }
        try await token.ready()
        #expect(token.recovered == nil, "no catch-up asked yet")
        try await publisher.publish(ChatLine(text: "seen", n: 6))
        #expect(await eventually { got.value == [6] })

        client.loop.cutConnection()
        for n in 7...10 { try await publisher.publish(ChatLine(text: "missed", n: n)) }
        #expect(await reconnected(states))
        #expect(await eventually { token.recovered != nil })
        #expect(token.recovered == false, "7 and 8 fell out of a two-event history")
        #expect(await eventually { errors.value.contains(.historyLost(subscription: "chat", channel: "chat.lobby")) })
        #expect(await eventually { got.value.suffix(2) == [9, 10] }, "9 and 10 are replayed")
    }
}
