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
            try await client.request(raw: RawJSON("1"), to: Channel("calc", "slow"), timeout: 4)
        }
        #expect(error == .cancelled)
        #expect(took < prompt, "returned \(took) s after cancel, not at the 4 s timeout")
        #expect(client.state.withLock { $0.pending.isEmpty }, "the waiter was removed")
        // The daemon's `timeout` answer for it comes later: dropped, not reported as an error.
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
        let call = try sender.signal(raw: RawJSON("1"), on: Channel("app", "slow"), timeout: 5)
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
