import Foundation
import Herald
@testable import HeraldExamples
import HeraldTestSupport
import Observation
import Testing

/// A view model as an app writes it: main-actor isolated, not `Sendable`.
@MainActor final class ScoreViewModel {
    var scores: [Int] = []
    var sawMainThread = true
}

/// An event for these tests.
struct Score: HeraldEvent {
    static let channel = Channel("game", "score")
    var points: Int
}

/// Marks the main dispatch queue (the main actor's executor), so a test can tell whether code
/// runs there. `onMainQueue()` cannot: under the async test runner on Linux the main
/// queue is drained by a thread that is not the process's first one.
let mainQueueKey: DispatchSpecificKey<Bool> = {
    let key = DispatchSpecificKey<Bool>()
    DispatchQueue.main.setSpecific(key: key, value: true)
    return key
}()

/// Whether the caller runs on the main queue, i.e. on the main actor.
func onMainQueue() -> Bool { DispatchQueue.getSpecific(key: mainQueueKey) == true }

/// `eventually` for conditions that read main-actor state: polls on the main actor, which is
/// free between polls, so queued main-actor deliveries run.
@MainActor func eventuallyOnMain(within seconds: Double = 10, _ condition: @MainActor () -> Bool) async -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if condition() { return true }
        try? await Task.sleep(nanoseconds: 10_000_000)
    }
    return condition()
}

/// Issue 17, "Main actor": `.mainActor` delivery, `@MainActor` handlers, owners that are
/// main-actor objects without `Sendable`, and mirrors observed on the main actor.
@Suite struct MainActorDeliveryTests {
    @Test @MainActor func mainActorHandlerRunsOnTheMainThreadInOrder() async throws {
        let daemon = try TestDaemon()
        let client = try await connectedClient(daemon)
        defer { client.close() }
        _ = mainQueueKey
        let model = ScoreViewModel()
        // The handler touches a non-Sendable main-actor object directly: no Task hop.
        let token = try client.subscribeOnMain(Score.self) { score, _ in
            model.sawMainThread = model.sawMainThread && onMainQueue()
            model.scores.append(score.points)
        }
        try await token.ready()
        for points in 1...20 { try client.post(Score(points: points)) }
        #expect(await eventuallyOnMain { model.scores.count == 20 })
        #expect(model.scores == Array(1...20))
        #expect(model.sawMainThread)
    }

    @Test @MainActor func deliveryModeMainActorRunsSendableHandlersOnTheMainThread() async throws {
        let daemon = try TestDaemon()
        let client = try await connectedClient(daemon)
        defer { client.close() }
        _ = mainQueueKey
        let threads = LockedValue<[Bool]>([])
        let token = try client.subscribe(Score.self, options: SubscriptionOptions(delivery: .mainActor)) { _, _ in
            threads.withLock { $0.append(onMainQueue()) }
        }
        try await token.ready()
        try await client.publish(Score(points: 1))
        #expect(await eventuallyOnMain { threads.value.count == 1 })
        #expect(threads.value == [true])
    }

    @Test @MainActor func mainActorOwnerEndsTheSubscriptionWhenReleased() async throws {
        let daemon = try TestDaemon()
        let client = try await connectedClient(daemon)
        defer { client.close() }
        var model: ScoreViewModel? = ScoreViewModel()
        weak let watched = model
        let token = try client.subscribeOnMain(Score.self, owner: model!, options: SubscriptionOptions(name: "board")) { owner, score, _ in
            owner.scores.append(score.points)
        }
        try await token.ready()
        try await client.publish(Score(points: 7))
        #expect(await eventuallyOnMain { watched?.scores == [7] })
        model = nil
        #expect(watched == nil, "the subscription does not keep its owner alive")
        // The sweep checks the owner on the main actor and tells the daemon.
        #expect(await eventuallyOnMain(within: 5) { !token.isActive })
        let subs = try await client.call("subs")
        #expect(!String(decoding: subs.bytes, as: UTF8.self).contains("\"board\""))
    }

    @Test @MainActor func mirrorOnTheMainActorChangesThereAndNotifiesObservation() async throws {
        let daemon = try TestDaemon()
        let client = try await connectedClient(daemon)
        let writer = try await connectedClient(daemon, name: "writer")
        defer { client.close(); writer.close() }
        let channel = Channel("app", "main", "theme")
        try await writer.set(Theme(mode: "light"), at: channel)
        let theme = try await client.remoteValue(Theme.self, at: channel).onMainActor()
        #expect(theme.value == Theme(mode: "light"))
        _ = mainQueueKey
        let fired = LockedValue<[Bool]>([])
        withObservationTracking {
            _ = theme.value
        } onChange: {
            fired.withLock { $0.append(onMainQueue()) }
        }
        let labels = LockedValue<[String]>([])
        let watching = try await client.remoteValue(Theme.self, at: channel).observeOnMain { value, _ in
            MainActor.assumeIsolated { labels.withLock { $0.append(value?.mode ?? "-") } }
        }
        try await writer.set(Theme(mode: "dark"), at: channel)
        #expect(await eventuallyOnMain { theme.value == Theme(mode: "dark") })
        #expect(fired.value == [true], "Observation fired once, on the main thread")
        #expect(await eventuallyOnMain { labels.value == ["light", "dark"] })
        watching.cancel()
    }

    @Test @MainActor func guideViewModelFollowsValueListAndEventsOnTheMainActor() async throws {
        let daemon = try TestDaemon()
        let client = try await connectedClient(daemon)
        let writer = try await connectedClient(daemon, name: "writer")
        defer { client.close(); writer.close() }
        let ownerChannel = Channel("app", "vm", "owner")
        let todoChannel = Channel("app", "vm", "todo")
        let owner = try await client.remoteValue(String.self, at: ownerChannel)
        let todos = try await client.remoteList(Todo.self, at: todoChannel)
        let model = try SettingsViewModel(client: client, owner: owner, todos: todos)
        #expect(model.title == "nobody: 0 to do")
        try await writer.set("ann", at: ownerChannel)
        let list = try await writer.remoteList(Todo.self, at: todoChannel)
        try await list.append(Todo(title: "milk", done: false))
        try await writer.publish(ChatLine(text: "hello", n: 1))
        #expect(await eventuallyOnMain { model.title == "ann: 1 to do" && model.lastMessage == "hello" })
    }
}
