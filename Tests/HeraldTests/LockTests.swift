import Foundation
@testable import Herald
@testable import HeraldExamples
import HeraldTestSupport
import Testing

@Suite struct LockTests {
    @Test func channelLockSilencesAndUnlockResumes() async throws {
        let daemon = try TestDaemon()
        let client = try await connectedClient(daemon)
        defer { client.close() }
        let me = try #require(client.serverInfo?.client)
        let got = LockedValue<[Int]>([])
        let feed = try client.subscribe(ChatLine.self, options: SubscriptionOptions(name: "feed")) { line, _ in got.withLock { $0.append(line.n) } }
        try await feed.ready()
        #expect(try await client.lock(Channel("chat", .rest)) == ["\(me)/feed"])
        #expect(try await client.publish(ChatLine(text: "x", n: 1)).receivers == 0)
        #expect(try await client.locks(on: ChatLine.channel) == LockStatus(channel: "chat.lobby", locked: ["\(me)/feed"], unlocked: []))
        #expect(try await client.unlock(Channel("chat", .rest)) == 1)
        #expect(try await client.unlock(Channel("chat", .rest)) == 0, "a second unlock releases nothing")
        try await client.publish(ChatLine(text: "y", n: 2))
        #expect(await eventually { got.value == [2] })
    }

    @Test func settingsEditPausesLiveUpdates() async throws {
        struct Theme: HeraldEvent { static let channel = Channel("app", "settings", "theme"); var dark: Bool }
        let daemon = try TestDaemon()
        let client = try await connectedClient(daemon)
        let other = try await connectedClient(daemon, name: "other")
        defer { client.close(); other.close() }
        let seen = LockedValue<[Bool]>([])
        let watcher = try other.subscribe(Theme.self) { theme, _ in seen.withLock { $0.append(theme.dark) } }
        try await watcher.ready()
        let publisher = other
        try await editWithoutLiveUpdates(client) {
            _ = try? await publisher.publish(Theme(dark: true))   // silenced: the edit holds the lock
        }
        try await other.publish(Theme(dark: false))
        #expect(await eventually { seen.value == [false] })
        try await drainOrdered(other)
        #expect(seen.value == [false])
    }

    @Test func ownSubscriptionLockedByName() async throws {
        let daemon = try TestDaemon()
        let client = try await connectedClient(daemon)
        defer { client.close() }
        let me = try #require(client.serverInfo?.client)
        let feed = try client.subscribe(ChatLine.self, options: SubscriptionOptions(name: "feed")) { _, _ in }
        try await feed.ready()
        let status = try await muteFeed(client)
        #expect(status.locked == ["\(me)/feed"])
        #expect(status.unlocked.isEmpty)
        #expect(try await client.unlock(subscription: "feed") == 1)
        #expect(try await client.locks(on: ChatLine.channel).unlocked == ["\(me)/feed"])
    }

    @Test func refusedLocksThrowTheDaemonsCode() async throws {
        let daemon = try TestDaemon()
        let client = try await connectedClient(daemon)
        defer { client.close() }
        #expect(isServerError(await thrownError { () async throws(HeraldClientError) in try await client.lock(subscription: "nope") }, "not_found"))
        #expect(isServerError(await thrownError { () async throws(HeraldClientError) in try await client.lock(Channel("$sys", .rest)) }, "forbidden"))
        let pattern = await thrownError { () async throws(HeraldClientError) in try await client.locks(on: Channel("chat", .one)) }
        #expect({ if case .badChannel? = pattern { true } else { false } }(), "locks needs a concrete channel")
        #expect(client.state.withLock { $0.locks.isEmpty }, "refused locks are not restored later")
    }

    @Test func locksAreTakenAgainAfterTheDaemonRestarts() async throws {
        let daemon = try TestDaemon()
        let client = try await connectedClient(daemon)
        defer { client.close() }
        let errors = collectErrors(client)
        let states = recordStates(client)
        let old = try #require(client.serverInfo?.client)
        let got = LockedValue<[String]>([])
        let feed = try client.subscribe(ChatLine.self, options: SubscriptionOptions(name: "feed")) { line, _ in got.withLock { $0.append("feed:\(line.n)") } }
        let cars = try client.subscribe(CarMoved.self, options: SubscriptionOptions(name: "cars")) { moved, _ in got.withLock { $0.append("cars:\(moved.x)") } }
        let news = try client.subscribe(raw: Channel("news"), options: SubscriptionOptions(name: "news")) { _, _ in got.withLock { $0.append("news") } }
        for token in [feed, cars, news] { try await token.ready() }
        try await client.lock(subscription: "feed")
        try await client.lock(Channel("car", "1", "moved"))
        try await client.lock(Channel("news"), subscriptions: ["\(old)/news"])   // own id: rewritten on reconnect

        try daemon.restart()
        #expect(await reconnected(states))
        let new = try #require(client.serverInfo?.client)
        // The restore is pipelined behind the hello; a query after it sees its effect.
        #expect(try await client.locks(on: ChatLine.channel).locked == ["\(new)/feed"])
        #expect(try await client.locks(on: Channel("car", 1, "moved")).locked == ["\(new)/cars"])
        #expect(try await client.locks(on: Channel("news")).locked == ["\(new)/news"])
        #expect(try await client.stats()["locks"] == 3)

        let publisher = try await connectedClient(daemon, name: "pub")
        defer { publisher.close() }
        try await publisher.publish(ChatLine(text: "x", n: 1))
        try await publisher.publish(raw: nil, to: Channel("news"))
        try await publisher.publish(CarMoved(x: 1), to: Car.moved(id: 1))
        try await publisher.publish(CarMoved(x: 2), to: Car.moved(id: 2))
        #expect(await eventually { got.value == ["cars:2"] })
        try await drainOrdered(client)
        #expect(got.value == ["cars:2"])
        #expect(!errors.value.contains { if case .server = $0 { true } else { false } }, "\(errors.value)")

        // The restored locks are still this client's to release.
        #expect(try await client.unlock(subscription: "feed") == 1)
        #expect(try await client.unlock(Channel("news"), subscriptions: ["\(new)/news"]) == 1)
        try await publisher.publish(ChatLine(text: "y", n: 2))
        #expect(await eventually { got.value.contains("feed:2") })
    }

    @Test func nameLockFollowsARebindUnderTheSameName() async throws {
        let daemon = try TestDaemon()
        let client = try await connectedClient(daemon)
        defer { client.close() }
        let me = try #require(client.serverInfo?.client)
        let first = try client.subscribe(ChatLine.self, options: SubscriptionOptions(name: "feed")) { _, _ in }
        try await first.ready()
        try await client.lock(subscription: "feed")
        first.cancel()
        let again = try client.subscribe(ChatLine.self, options: SubscriptionOptions(name: "feed")) { _, _ in }
        try await again.ready()
        #expect(try await client.locks(on: ChatLine.channel).locked == ["\(me)/feed"])
    }
}
