import Foundation
@testable import Herald
@testable import HeraldExamples
import HeraldTestSupport
import Testing

@Suite struct InstanceChannelTests {
    @Test func removalEndsExactSubscriptionsWithAReason() async throws {
        let daemon = try TestDaemon()
        let owner = try await connectedClient(daemon, name: "car-42")
        let follower = try await connectedClient(daemon, name: "view")
        defer { owner.close(); follower.close() }
        let errors = collectErrors(follower)
        try await carAppears(owner, id: 42)
        #expect(try await follower.channels(matching: Channel("car", .rest)).first?.owner == owner.serverInfo?.client)

        let moves = LockedValue<[Int]>([])
        let followed = Task { try await followCar(follower, id: 42) { x in moves.withLock { $0.append(x) } } }
        let ends = LockedValue<[SubscriptionEnd]>([])
        let handlerSide = try follower.subscribe(Car.moved(id: 42), options: SubscriptionOptions(onEnd: { end in ends.withLock { $0.append(end) } })) { _, _ in }
        let stream = try follower.events(Car.moved(id: 42))
        let everyCar = try follower.subscribe(CarMoved.self) { _, _ in }
        for token in [handlerSide, stream.subscription, everyCar] { try await token.ready() }
        // followCar subscribes in its own task: wait until the daemon has all four.
        var count = 0
        for _ in 0..<100 where count < 4 {
            count = try await follower.serverSubscriptions().count
            if count < 4 { try await Task.sleep(nanoseconds: 20_000_000) }
        }
        #expect(count == 4)

        try await owner.publish(CarMoved(x: 1), to: Car.moved(id: 42))
        #expect(await eventually { moves.value == [1] })
        try await owner.remove(Car.moved(id: 42).channel)

        #expect(try await followed.value == .removed(channel: "car.42.moved"))
        #expect(await eventually { ends.value == [.removed(channel: "car.42.moved")] })
        #expect(try await handlerSide.ended() == .removed(channel: "car.42.moved"))
        var streamed = 0
        for await _ in stream { streamed += 1 }
        #expect(streamed == 1, "the stream got the move, then finished")
        #expect(stream.subscription.endReason == .removed(channel: "car.42.moved"))
        #expect(!handlerSide.isActive)
        #expect(everyCar.isActive && everyCar.endReason == nil, "wildcard subscriptions stay")
        #expect(try await follower.serverSubscriptions().map(\.ch) == ["car.*.moved"])
        #expect(errors.value.isEmpty, "a removal is not an error: \(errors.value)")
        #expect(owner.declaredChannels.isEmpty)
    }

    @Test func ownerLeavingRemovesItsChannels() async throws {
        let daemon = try TestDaemon()
        let owner = try await connectedClient(daemon, name: "car-7")
        let follower = try await connectedClient(daemon, name: "view")
        defer { follower.close() }
        try await carAppears(owner, id: 7)
        let token = try follower.subscribe(Car.moved(id: 7)) { _, _ in }
        try await token.ready()
        owner.close()
        #expect(try await token.ended() == .removed(channel: "car.7.moved"))
    }

    @Test func secondOwnerGetsConflictAndRemoveAllReleases() async throws {
        let daemon = try TestDaemon()
        let first = try await connectedClient(daemon, name: "a")
        let second = try await connectedClient(daemon, name: "b")
        defer { first.close(); second.close() }
        try await first.declare(Channel("doc", 1))
        try await first.declare(Channel("doc", 1))   // again: still owned once
        try await first.declare(Channel("doc", 2))
        #expect(first.declaredChannels == [Channel("doc", 1), Channel("doc", 2)])
        #expect(isServerError(await thrownError { () async throws(HeraldClientError) in try await second.declare(Channel("doc", 1)) }, "conflict"))
        #expect(isServerError(await thrownError { () async throws(HeraldClientError) in try await second.remove(Channel("doc", 1)) }, "forbidden"))
        #expect(second.declaredChannels.isEmpty)
        #expect(try await first.removeAllInstanceChannels() == 2)
        #expect(first.declaredChannels.isEmpty)
        try await second.declare(Channel("doc", 1))
    }

    @Test func declaredChannelsAreDeclaredAgainAfterReconnect() async throws {
        let daemon = try TestDaemon()
        let owner = try await connectedClient(daemon, name: "car-42")
        defer { owner.close() }
        let states = recordStates(owner)
        try await carAppears(owner, id: 42)
        try daemon.restart()
        #expect(await reconnected(states))
        let channels = try await owner.channels(matching: Channel("car", .rest))
        #expect(channels.map(\.ch) == ["car.42.moved"])
        #expect(channels.first?.owner == owner.serverInfo?.client)
    }

    @Test func redeclareConflictIsRetriedThenReportedAndForgotten() async throws {
        let daemon = try TestDaemon()
        // A slow first retry, so the rival can take the channel while the owner is away; a
        // short bound for retrying the conflict.
        let owner = HeraldClient(configuration: ClientConfiguration(
            endpoint: .tcp(host: "127.0.0.1", port: daemon.port), name: "owner",
            reconnect: ReconnectPolicy(initialDelay: 2, maxDelay: 2), restoreRetryTimeout: 0.6))
        try await owner.connect()
        let rival = try await connectedClient(daemon, name: "rival")
        defer { owner.close(); rival.close() }
        let errors = collectErrors(owner)
        let states = recordStates(owner)
        try await owner.declare(Channel("doc", 9))
        owner.loop.cutConnection()
        // The daemon removes the channel when it notices the owner left; then the rival wins it.
        var taken = false
        for _ in 0..<200 where !taken {
            taken = (await thrownError { () async throws(HeraldClientError) in try await rival.declare(Channel("doc", 9)) }) == nil
            if !taken { try await Task.sleep(nanoseconds: 10_000_000) }
        }
        #expect(taken)
        #expect(await reconnected(states))
        #expect(owner.declaredChannels == [Channel("doc", 9)], "still wanted while the conflict is retried")
        #expect(await eventually {
            errors.value.contains { error in
                guard case .restoreFailed(.instanceChannel, "doc.9", let cause) = error else { return false }
                return isServerError(cause, "conflict")
            }
        }, "\(errors.value)")
        #expect(owner.declaredChannels.isEmpty)
        #expect(try await owner.channels(matching: Channel("doc", .rest)).first?.owner == rival.serverInfo?.client)
    }
}
