import Foundation
@testable import Herald
import HeraldTestSupport
import Testing

/// Restores refused with an error that may pass are retried with backoff up to
/// `restoreRetryTimeout`; final refusals are forgotten and reported as `restoreFailed`
/// (issue 31: nothing dropped silently). The daemon's refusals are scripted.
@Suite struct RestoreRetryTests {
    /// A client of `daemon` with a `bound` for retrying restores.
    private func client(_ daemon: ScriptedDaemon, bound: Double) async throws -> HeraldClient {
        let client = HeraldClient(configuration: ClientConfiguration(
            endpoint: .tcp(host: "127.0.0.1", port: daemon.port), reconnect: ReconnectPolicy(initialDelay: 0.05, maxDelay: 0.2),
            restoreRetryTimeout: bound))
        try await client.connect()
        return client
    }

    private func frames(_ daemon: ScriptedDaemon, _ op: String, on connection: Int) -> [ScriptedDaemon.Received] {
        daemon.received.filter { $0.op == op && $0.connection == connection }
    }

    @Test func retriesBackOffAndStopAtTheDeadline() throws {
        let start: UInt64 = 1_000_000_000
        var retry = try #require(RestoreRetry.first(within: 3, now: start))
        #expect(retry.delay == 0.1)
        var delays: [Double] = []
        var now = start
        while let next = retry.next(now: now) {
            delays.append(next.delay)
            now += UInt64(next.delay * 1e9)
            retry = next
        }
        #expect(delays.prefix(4) == [0.2, 0.4, 0.8, 1.0], "doubling from 0.1 s, capped at 1 s: \(delays)")
        #expect(now >= start + 3_000_000_000 && now < start + 3_200_000_000, "the last attempt lands at the deadline")
        #expect(RestoreRetry.first(within: 0, now: start) == nil, "0 turns retrying off")
        #expect(RestoreItem.instanceChannel("a").retries("conflict") && RestoreItem.link(LinkRecord(channel: "a", parent: "b")).retries("conflict"))
        #expect(!RestoreItem.lock(LockRecord(subscription: "s")).retries("conflict") && RestoreItem.lock(LockRecord(subscription: "s")).retries("unavailable"))
        #expect(!RestoreItem.instanceChannel("a").retries("forbidden"))
    }

    /// A restored subscription refused `unavailable` (the node cannot reach Redis yet) is sent
    /// again until accepted: it stays live, and nothing is reported.
    @Test func aSubscriptionRefusedUnavailableIsRetriedUntilAccepted() async throws {
        let daemon = try ScriptedDaemon()
        let client = try await client(daemon, bound: 10)
        defer { client.close() }
        let errors = collectErrors(client)
        let states = recordStates(client)
        let events = LockedValue(0)
        let feed = try client.subscribe(raw: Channel("chat", "lobby"), options: SubscriptionOptions(name: "feed")) { _, _ in
            events.withLock { $0 += 1 }
        }
        try await feed.ready()
        daemon.send(#"{"event":"chat.lobby","sub":"feed","seq":1,"data":1}"#)
        #expect(await eventually { events.value == 1 })

        daemon.refuse("sub", with: "unavailable", times: 3)
        daemon.dropNewest()
        #expect(await reconnected(states))
        #expect(await eventually { frames(daemon, "sub", on: 2).count == 4 }, "three refusals, then accepted")
        #expect(feed.isActive)
        daemon.send(#"{"event":"chat.lobby","sub":"feed","seq":2,"data":2}"#)
        #expect(await eventually { events.value == 2 }, "delivered once accepted")
        #expect(errors.value.isEmpty, "\(errors.value)")
    }

    /// A subscription still refused `unavailable` when the bound runs out ends (`.refused`) and
    /// is reported as `restoreFailed`.
    @Test func aSubscriptionStillRefusedAfterTheBoundEndsAndIsReported() async throws {
        let daemon = try ScriptedDaemon()
        let client = try await client(daemon, bound: 0.5)
        defer { client.close() }
        let errors = collectErrors(client)
        let states = recordStates(client)
        let feed = try client.handle(raw: Channel("ui", "home"), options: SubscriptionOptions(name: "screen")) { _, _ in .stop }
        try await feed.ready()

        daemon.refuse("sub", with: "unavailable")
        daemon.dropNewest()
        #expect(await reconnected(states))
        let ended = try await feed.ended()
        #expect({ if case .refused(let error) = ended { isServerError(error, "unavailable") } else { false } }(), "\(ended)")
        #expect(frames(daemon, "sub", on: 2).count > 2, "retried before giving up")
        #expect(await eventually { !errors.value.isEmpty })
        let failure = try #require(errors.value.first)
        guard case .restoreFailed(.subscription(name: "screen"), "ui.home", let cause) = failure else {
            Issue.record("\(errors.value)")
            return
        }
        #expect(isServerError(cause, "unavailable"))
        #expect(!client.state.withLock { $0.subscriptions.keys.contains("screen") })
    }

    /// A lock refused for good (here `forbidden`) is not retried: forgotten and reported at once.
    @Test func aLockRefusedForGoodIsForgottenAndReported() async throws {
        let daemon = try ScriptedDaemon()
        let client = try await client(daemon, bound: 10)
        defer { client.close() }
        let errors = collectErrors(client)
        let states = recordStates(client)
        try await client.lock(Channel("muted", .rest))

        daemon.refuse("lock", with: "forbidden")
        daemon.dropNewest()
        #expect(await reconnected(states))
        #expect(await eventually { !errors.value.isEmpty })
        guard case .restoreFailed(.lock(subscription: nil), "muted.>", let cause)? = errors.value.first else {
            Issue.record("\(errors.value)")
            return
        }
        #expect(isServerError(cause, "forbidden"))
        #expect(client.state.withLock { $0.locks.isEmpty })
        #expect(frames(daemon, "lock", on: 2).count == 1, "not retried")
    }
}
