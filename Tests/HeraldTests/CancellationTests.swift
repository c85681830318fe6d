import Foundation
@testable import Herald
import HeraldTestSupport
import Testing

/// Issue 17, "Cancellation everywhere": every `async` call returns `.cancelled` at once when its
/// task is cancelled, and leaves nothing behind in the client (no pending answer, no waiter,
/// no report when the daemon's late answer comes). Before, a cancelled request waited for its
/// reply, `result()` for the route's end, and `ended()`, `ready()` and `connect()` forever.
@Suite struct CancellationTests {
    private let prompt = 1.5

    /// Runs `body` in a task, cancels it after `delay` seconds, and returns its error and how
    /// long the cancelled call took to return. "At once" is judged against `prompt` seconds:
    /// generous for a loaded 2-core box, far below what each call would wait without cancel.
    private func cancelled<T: Sendable>(after delay: Double = 0.2,
                                        _ body: @escaping @Sendable () async throws(HeraldClientError) -> T) async -> (HeraldClientError?, Double) {
        let task = Task { () async -> HeraldClientError? in
            do throws(HeraldClientError) {
                _ = try await body()
                return nil
            } catch {
                return error
            }
        }
        try? await Task.sleep(nanoseconds: UInt64(delay * 1e9))
        let start = Date()
        task.cancel()
        let error = await task.value
        return (error, Date().timeIntervalSince(start))
    }

    @Test func cancelledRequestReturnsAtOnceAndItsLateAnswerIsDropped() async throws {
        let daemon = try TestDaemon()
        let client = try await connectedClient(daemon)
        defer { client.close() }
        let errors = collectErrors(client)
        let silent = try client.subscribe(raw: Channel("calc", "slow")) { _, _ in }   // never replies
        try await silent.ready()
        let (error, took) = await cancelled { () async throws(HeraldClientError) in
            try await client.request(raw: RawJSON("1"), to: Channel("calc", "slow"), timeout: .seconds(4))
        }
        #expect(error == .cancelled)
        #expect(took < prompt, "returned \(took) s after cancel, not at the 4 s timeout")
        // The waiter went at once; the `cancel` sent to the daemon is answered promptly.
        #expect(await eventually(within: 2) { client.state.withLock { $0.pending.isEmpty } }, "the waiter was removed")
        // Nothing more comes for it (the daemon withdrew it: no late `timeout`), and were an
        // answer already on its way, it would be dropped, not reported as an error.
        try await Task.sleep(nanoseconds: 4_500_000_000)
        #expect(try await client.ping() > 0)
        #expect(errors.value.isEmpty, "late answer reported: \(errors.value)")
        #expect(client.state.withLock { $0.abandoned.isEmpty })
    }

    @Test func cancelledSignalResultReturnsAtOnceAndDropsItsCallbacks() async throws {
        let daemon = try TestDaemon()
        let handlerSide = try await connectedClient(daemon, name: "handler")
        let sender = try await connectedClient(daemon, name: "sender")
        defer { handlerSide.close(); sender.close() }
        let errors = collectErrors(sender)
        let handler = try handlerSide.handle(raw: Channel("app", "slow")) { _, context in
            try await Task.sleep(nanoseconds: 3_000_000_000)
            try context.callback("late")
            return .stop
        }
        try await handler.ready()
        let call = try sender.signal(raw: RawJSON("1"), on: Channel("app", "slow"), timeout: .seconds(5))
        let (error, took) = await cancelled { () async throws(HeraldClientError) in try await call.result() }
        #expect(error == .cancelled)
        #expect(took < prompt, "returned \(took) s after cancel")
        var callbacks = 0
        for await _ in call.callbacks { callbacks += 1 }   // finished by the cancel
        #expect(callbacks == 0)
        // The handler's late callback and the daemon's result are dropped quietly.
        try await Task.sleep(nanoseconds: 3_500_000_000)
        #expect(errors.value.isEmpty, "reported: \(errors.value)")
        #expect(sender.state.withLock { $0.signals.sinks.isEmpty && $0.pending.isEmpty })
    }

    /// What the daemon holds for requests and signals, from `stats`.
    private struct Pending: Decodable, Equatable {
        let requests: Int
        let signals: Int
        let timers: Int
    }

    private func pending(_ client: HeraldClient) async throws -> Pending {
        try await client.call("stats").decode(as: Pending.self)
    }

    private static let nothing = Pending(requests: 0, signals: 0, timers: 0)

    /// Polls `stats` until it shows nothing pending or `seconds` passed. - Returns: the last figures.
    private func settledPending(_ client: HeraldClient, within seconds: Double = 1) async throws -> Pending {
        let deadline = Date().addingTimeInterval(seconds)
        var figures = try await pending(client)
        while figures != Self.nothing, Date() < deadline {
            try await Task.sleep(nanoseconds: 20_000_000)
            figures = try await pending(client)
        }
        return figures
    }

    @Test func cancelledRequestIsWithdrawnFromTheDaemonSoTheResponderReplyReachesNobody() async throws {
        let daemon = try TestDaemon()
        let requester = try await connectedClient(daemon, name: "requester")
        let responder = try await connectedClient(daemon, name: "responder")
        defer { requester.close(); responder.close() }
        let errors = collectErrors(requester)
        let token = LockedValue<String?>(nil)
        let silent = try responder.subscribe(raw: Channel("calc", "slow")) { _, metadata in
            token.withLock { $0 = metadata.replyToken }
        }
        try await silent.ready()
        let (error, took) = await cancelled(after: 0.3) { () async throws(HeraldClientError) in
            try await requester.request(raw: RawJSON("1"), to: Channel("calc", "slow"), timeout: .seconds(30))
        }
        #expect(error == .cancelled)
        #expect(took < prompt)
        #expect(try await settledPending(responder) == Self.nothing, "the daemon still holds the request")
        let reply = try await responder.call("reply", ["to": RawJSON(encoding: token.value ?? ""), "data": RawJSON("2")])
        #expect(reply.description.contains(#""delivered":false"#), "the waiter is gone: \(reply)")
        #expect(await eventually(within: 2) { requester.state.withLock { $0.abandoned.isEmpty && $0.pending.isEmpty } },
                "the client forgets the rid once the daemon answered the cancel")
        #expect(try await requester.ping() > 0)
        #expect(errors.value.isEmpty, "reported: \(errors.value)")
    }

    @Test func cancelledSignalTaskStopsTheRouteOnTheDaemonAndTheNextHandlerIsNeverOffered() async throws {
        let daemon = try TestDaemon()
        let handlers = try await connectedClient(daemon, name: "handlers")
        let sender = try await connectedClient(daemon, name: "sender")
        defer { handlers.close(); sender.close() }
        let errors = collectErrors(sender)
        let parentOffers = LockedValue(0)
        let holder = try handlers.handle(raw: Channel("app", "screen")) { _, _ in
            try await Task.sleep(nanoseconds: 1_000_000_000)
            return .pass
        }
        let parent = try handlers.handle(raw: Channel("app")) { _, _ in
            parentOffers.withLock { $0 += 1 }
            return .stop
        }
        try await holder.ready()
        try await parent.ready()
        let call = try sender.signal(raw: RawJSON("1"), on: Channel("app", "screen"), timeout: .seconds(5))
        let (error, took) = await cancelled(after: 0.3) { () async throws(HeraldClientError) in try await call.result() }
        #expect(error == .cancelled)
        #expect(took < prompt)
        #expect(try await settledPending(sender) == Self.nothing, "the route still runs")
        #expect(await eventually(within: 2) { sender.state.withLock { $0.signals.sinks.isEmpty && $0.pending.isEmpty } },
                "the client forgets the signal once the daemon answered the cancel, not at the route's end")
        try await Task.sleep(nanoseconds: 1_200_000_000)   // the holder passes now: ignored
        #expect(parentOffers.value == 0, "the next handler was offered the cancelled signal")
        #expect(errors.value.isEmpty, "reported: \(errors.value)")
    }

    @Test func signalCallCancelWithdrawsTheSignalFromTheDaemonAtOnce() async throws {
        let daemon = try TestDaemon()
        let handlers = try await connectedClient(daemon, name: "handlers")
        let sender = try await connectedClient(daemon, name: "sender")
        defer { handlers.close(); sender.close() }
        let offered = LockedValue(0)
        let silent = try handlers.handle(raw: Channel("doc")) { _, _ in
            offered.withLock { $0 += 1 }
            try await Task.sleep(nanoseconds: 10_000_000_000)   // never answers in time
            return .pass
        }
        try await silent.ready()
        let call = try sender.signal(raw: RawJSON("1"), on: Channel("doc", "save"), timeout: .seconds(10))
        #expect(await eventually(within: 2) { offered.value == 1 })
        call.cancel()
        #expect(await thrownError { () async throws(HeraldClientError) in try await call.result() } == .cancelled)
        #expect(try await settledPending(sender) == Self.nothing, "the daemon still waits for the handler")
        #expect(await eventually(within: 2) { sender.state.withLock { $0.signals.sinks.isEmpty && $0.pending.isEmpty } })
    }

    @Test func cancelledEndedAndReadyReturnAndTheSubscriptionStays() async throws {
        let daemon = try TestDaemon()
        let client = HeraldClient(configuration: ClientConfiguration(endpoint: .tcp(host: "127.0.0.1", port: daemon.port)))
        defer { client.close() }
        // Not connected yet: ready() has nothing to wait for but the first connection.
        let token = try client.subscribe(raw: Channel("news")) { _, _ in }
        let (readyError, readyTook) = await cancelled { () async throws(HeraldClientError) in try await token.ready() }
        #expect(readyError == .cancelled)
        #expect(readyTook < prompt)
        try await client.connect()
        try await token.ready()
        let (endedError, endedTook) = await cancelled { () async throws(HeraldClientError) in try await token.ended() }
        #expect(endedError == .cancelled)
        #expect(endedTook < prompt)
        #expect(token.isActive, "cancelling a wait does not end the subscription")
    }

    @Test func cancelledConnectReturnsAtOnceAndStopsRetrying() async throws {
        let daemon = try TestDaemon()
        daemon.stop()   // its port is now closed: every attempt is refused
        let client = HeraldClient(configuration: ClientConfiguration(
            endpoint: .tcp(host: "127.0.0.1", port: daemon.port), reconnect: ReconnectPolicy(initialDelay: 0.05, maxDelay: 0.2)))
        defer { client.close() }
        let (error, took) = await cancelled(after: 0.5) { () async throws(HeraldClientError) in
            try await client.connect(waitsForConnectivity: true)
        }
        #expect(error == .cancelled)
        #expect(took < prompt)
        #expect(await eventually { client.state.withLock { !$0.threadRunning } }, "no retry goes on behind the app's back")
        if case .disconnected = client.connectionState {} else {
            Issue.record("state \(client.connectionState)")
        }
    }
}
