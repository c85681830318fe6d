import Foundation
import Herald
import HeraldTestSupport
import HeraldExamples

// The guide's event types, shared with Examples/ (one definition, so the tests and the
// examples speak the same JSON).
typealias ChatLine = HeraldExamples.ChatLine
typealias CarMoved = HeraldExamples.CarMoved
typealias Car = HeraldExamples.Car

/// An object whose lifetime bounds a subscription.
final class Owner: Sendable {
    let received = LockedValue<[Int]>([])
}

/// A connected client for `daemon`, closed by the test.
func connectedClient(_ daemon: TestDaemon, name: String = "test", reconnect: ReconnectPolicy = ReconnectPolicy(initialDelay: 0.05, maxDelay: 0.5)) async throws -> HeraldClient {
    let client = HeraldClient(configuration: ClientConfiguration(endpoint: .tcp(host: "127.0.0.1", port: daemon.port), name: name, reconnect: reconnect))
    try await client.connect()
    return client
}

/// Collects the errors a client reports.
func collectErrors(_ client: HeraldClient) -> LockedValue<[HeraldClientError]> {
    let errors = LockedValue<[HeraldClientError]>([])
    client.setErrorHandler { error in errors.withLock { $0.append(error) } }
    return errors
}

/// Waits until every `.ordered` delivery queued so far has run (the queue is serial).
func drainOrdered(_ client: HeraldClient) async throws {
    let marker = LockedValue(false)
    let sub = try client.subscribe(raw: Channel("drain", "marker"), options: SubscriptionOptions(name: "drain-marker")) { _, _ in
        marker.withLock { $0 = true }
    }
    try await sub.ready()
    try await client.publish(raw: nil, to: Channel("drain", "marker"))
    _ = await eventually { marker.value }
    sub.cancel()
}

/// Records a client's connection states.
func recordStates(_ client: HeraldClient) -> LockedValue<[ConnectionState]> {
    let states = LockedValue<[ConnectionState]>([])
    let stream = client.stateUpdates()
    Task { for await state in stream { states.withLock { $0.append(state) } } }
    return states
}

/// Waits until the client is connected again after a loss.
func reconnected(_ states: LockedValue<[ConnectionState]>) async -> Bool {
    await eventually(within: 20) {
        let seen = states.value
        guard let lost = seen.lastIndex(where: { if case .disconnected = $0 { true } else { false } }) else { return false }
        return seen[lost...].contains(.connected)
    }
}

/// Whether `error` is the daemon's error `code`.
func isServerError(_ error: HeraldClientError?, _ code: String) -> Bool {
    if case .server(let actual, _, _)? = error { return actual == code }
    return false
}

/// Runs `body` and returns the error it threw, or nil.
func thrownError<T>(_ body: () async throws(HeraldClientError) -> T) async -> HeraldClientError? {
    do {
        _ = try await body()
        return nil
    } catch {
        return error
    }
}
