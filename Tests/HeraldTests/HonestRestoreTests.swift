import Foundation
@testable import Herald
import HeraldTestSupport
import Testing

/// Honest restore (issue 38): one epoch notice instead of one `historyLost` per subscription,
/// no word to subscriptions that had nothing to lose, what could not be restored told to its
/// owner, and `restored` only once every restore was answered.
@Suite struct HonestRestoreTests {
    private func client(_ daemon: ScriptedDaemon) async throws -> HeraldClient {
        let client = HeraldClient(configuration: ClientConfiguration(
            endpoint: .tcp(host: "127.0.0.1", port: daemon.port), reconnect: ReconnectPolicy(initialDelay: 0.05, maxDelay: 0.2)))
        try await client.connect()
        return client
    }

    /// The `sub` frames for `name` on the daemon's newest connection.
    private func subs(_ daemon: ScriptedDaemon, _ name: String) -> Int {
        let newest = daemon.received.map(\.connection).max() ?? 0
        return daemon.received.filter { $0.connection == newest && $0.op == "sub" && $0.sub == name }.count
    }

    @Test func restoredWaitsUntilEveryRestoreIsAnswered() async throws {
        let daemon = try ScriptedDaemon()
        let client = try await client(daemon)
        defer { client.close() }
        let feed = try client.subscribe(raw: Channel("chat", "lobby"), options: SubscriptionOptions(name: "feed")) { _, _ in }
        try await feed.ready()
        try await client.declare(Channel("car", "7"))
        let states = recordStates(client)
        let subsWhenRestored = LockedValue<Int?>(nil)
        let stream = client.stateUpdates()
        Task {
            var lost = false
            for await state in stream {
                if case .disconnected = state { lost = true }
                if lost, state == .restored {
                    subsWhenRestored.withLock { $0 = subs(daemon, "feed") }
                    break
                }
            }
        }

        // The restored `sub` is refused as passing three times, then accepted.
        daemon.refuse("sub", with: "unavailable", times: 3)
        daemon.dropNewest()
        #expect(await eventually(within: 20) { subsWhenRestored.value != nil }, "\(states.value)")
        #expect(subsWhenRestored.value == 4, "restored only after the accepted retry")
        #expect(await eventually { states.value.filter { $0 == .connected }.count == 1 }, "\(states.value)")
        #expect(client.declaredChannels == [Channel("car", "7")])
    }

    @Test func restoredCountsLocksButNotOneWhoseSubscriptionIsGone() async throws {
        let daemon = try ScriptedDaemon()
        let client = try await client(daemon)
        defer { client.close() }
        let feed = try client.subscribe(raw: Channel("chat", "lobby"), options: SubscriptionOptions(name: "feed")) { _, _ in }
        let kept = try client.subscribe(raw: Channel("chat", "kept"), options: SubscriptionOptions(name: "kept")) { _, _ in }
        try await feed.ready()
        try await kept.ready()
        try await client.lock(subscription: "feed")
        try await client.lock(subscription: "kept")
        try await client.lock(Channel("app", .rest))
        feed.cancel()   // its name lock stays, for a later re-bind, but goes out with no `sub`
        let states = recordStates(client)

        daemon.dropNewest()
        #expect(await eventually(within: 20) {
            let all = states.value
            guard let lost = all.lastIndex(where: { if case .disconnected = $0 { true } else { false } }) else { return false }
            return all[lost...].contains(.restored)
        }, "\(states.value)")
        let newest = daemon.received.map(\.connection).max() ?? 0
        #expect(daemon.received.filter { $0.connection == newest && $0.op == "lock" }.count == 2, "the channel lock and kept's")
    }

    @Test func aRefusedRestoreIsToldToTheSubscriptionsOwnHandler() async throws {
        let daemon = try ScriptedDaemon()
        let client = try await client(daemon)
        defer { client.close() }
        let global = collectErrors(client)
        let own = LockedValue<[HeraldClientError]>([])
        let feed = try client.subscribe(raw: Channel("chat", "lobby"), options: SubscriptionOptions(
            name: "feed", onError: { error in own.withLock { $0.append(error) } })) { _, _ in }
        let other = try client.subscribe(raw: Channel("chat", "other"), options: SubscriptionOptions(name: "other")) { _, _ in }
        try await feed.ready()
        try await other.ready()
        let states = recordStates(client)

        // A permission revoked while away: the first `sub` after the reconnect is forbidden.
        daemon.refuse("sub", with: "forbidden", times: 1)
        daemon.dropNewest()
        #expect(await eventually(within: 20) { own.value.count == 1 })
        let cause = HeraldClientError.server(code: "forbidden", message: "scripted refusal", op: "sub")
        #expect(own.value == [.restoreFailed(kind: .subscription(name: "feed"), channel: "chat.lobby", cause: cause)])
        #expect(await eventually(within: 20) { states.value.contains(.restored) }, "a final refusal settles the restore")
        #expect(global.value.isEmpty, "the owner was told, not the client: \(global.value)")
        #expect(!feed.isActive)
        #expect(other.isActive)
    }

    @Test func aNewDataSetIsOneNoticeAndQuietSubscriptionsAreNotTold() async throws {
        let daemon = try TestDaemon()
        let client = try await connectedClient(daemon)
        defer { client.close() }
        let errors = collectErrors(client)
        let states = recordStates(client)
        let got = LockedValue<[Int]>([])
        let seen = try client.subscribe(ChatLine.self, options: SubscriptionOptions(name: "seen")) { line, _ in
            got.withLock { $0.append(line.n) }
        }
        var quiet: [Subscription] = []
        for index in 0..<50 {
            quiet.append(try client.subscribe(raw: Channel("quiet", "q\(index)"), options: SubscriptionOptions(name: "q\(index)")) { _, _ in })
        }
        try await seen.ready()
        for token in quiet { try await token.ready() }
        try await client.publish(ChatLine(text: "one", n: 1))
        #expect(await eventually { got.value == [1] })

        try daemon.restart()
        #expect(await eventually(within: 20) {
            let all = states.value
            guard let lost = all.lastIndex(where: { if case .disconnected = $0 { true } else { false } }) else { return false }
            return all[lost...].contains(.restored)
        }, "\(states.value)")
        try await Task.sleep(nanoseconds: 200_000_000)
        let notices = errors.value.filter { if case .epochChanged = $0 { true } else { false } }
        #expect(notices.count == 1, "\(errors.value)")
        #expect(!errors.value.contains { if case .historyLost = $0 { true } else { false } }, "\(errors.value)")
        #expect(seen.recovered == false, "the subscription that had events says so on its token")
        #expect(quiet.allSatisfy { $0.recovered == nil }, "nothing to lose, nothing said")
    }
}
