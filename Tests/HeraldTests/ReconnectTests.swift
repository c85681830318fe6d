import Foundation
@testable import Herald
import HeraldTestSupport
import Testing

@Suite struct ReconnectTests {
    /// Waits for the client to be connected again after a loss.
    private func waitForReconnect(_ states: LockedValue<[ConnectionState]>) async -> Bool {
        await eventually(within: 20) {
            let seen = states.value
            guard let lost = seen.lastIndex(where: { if case .disconnected = $0 { true } else { false } }) else { return false }
            return seen[lost...].contains(.connected)
        }
    }

    private func recordStates(_ client: HeraldClient) -> LockedValue<[ConnectionState]> {
        let states = LockedValue<[ConnectionState]>([])
        let stream = client.stateUpdates()
        Task { for await state in stream { states.withLock { $0.append(state) } } }
        return states
    }

    @Test func daemonRestartRestoresSubscriptionsGroupsMaxAndArgs() async throws {
        struct Row: Codable, Equatable { var row: Int }
        let daemon = try TestDaemon()
        let client = try await connectedClient(daemon)
        defer { client.close() }
        let errors = collectErrors(client)
        let states = recordStates(client)
        let lines = LockedValue<[(Int, Row?)]>([])
        let capped = try client.subscribe(ChatLine.self, options: SubscriptionOptions(
            name: "capped", group: "g", max: 5, args: try RawJSON(encoding: Row(row: 1)))) { line, meta in
            lines.withLock { $0.append((line.n, try? meta.args(as: Row.self))) }
        }
        let cars = LockedValue<[Int]>([])
        let all = try client.subscribe(CarMoved.self, options: SubscriptionOptions(name: "cars")) { moved, _ in
            cars.withLock { $0.append(moved.x) }
        }
        try await capped.ready()
        try await all.ready()
        for n in 1...2 { try await client.publish(ChatLine(text: "before", n: n)) }
        #expect(await eventually { lines.value.count == 2 })

        try daemon.restart()
        #expect(await waitForReconnect(states))
        let restored = try await client.serverSubscriptions()
        #expect(restored.map(\.sub) == ["capped", "cars"])
        #expect(restored.first?.group == "g")
        #expect(restored.first?.max == 3, "max restored as the remainder")

        let publisher = try await connectedClient(daemon, name: "pub")
        defer { publisher.close() }
        for n in 3...7 { try await publisher.publish(ChatLine(text: "after", n: n)) }
        try await publisher.publish(CarMoved(x: 9), to: Car.moved(id: 1))
        #expect(await eventually { lines.value.count == 5 && cars.value == [9] })
        try await drainOrdered(client)
        #expect(lines.value.map(\.0) == [1, 2, 3, 4, 5])
        #expect(lines.value.allSatisfy { $0.1 == Row(row: 1) }, "args restored")
        #expect(!capped.isActive)
        // A new daemon has no history: one notice says so for the whole reconnect, and the
        // subscription that had events says it on its token (`cars` had none: nothing to lose).
        let notices = errors.value.filter { if case .epochChanged = $0 { true } else { false } }
        #expect(notices.count == 1, "\(errors.value)")
        #expect(!errors.value.contains { if case .historyLost = $0 { true } else { false } }, "\(errors.value)")
        #expect(capped.recovered == false)
        #expect(all.recovered == nil)
    }

    @Test func stateStreamShowsTheLifecycle() async throws {
        let daemon = try TestDaemon()
        let client = HeraldClient(configuration: ClientConfiguration(
            endpoint: .tcp(host: "127.0.0.1", port: daemon.port), reconnect: ReconnectPolicy(initialDelay: 0.1, maxDelay: 0.5)))
        defer { client.close() }
        let states = recordStates(client)
        try await client.connect()
        daemon.stop()
        #expect(await eventually { states.value.contains { if case .reconnecting(let n) = $0 { n >= 2 } else { false } } })
        try daemon.restart()
        #expect(await waitForReconnect(states))
        let seen = states.value
        #expect(Array(seen.prefix(3)) == [.disconnected(.notStarted), .connecting, .connected])
        // The stream keeps the newest 32 states for a lagging consumer, so on a loaded machine
        // the first reconnect states may be gone; the later attempts and the end are there.
        #expect(seen.contains { if case .disconnected(let reason) = $0 { reason != .notStarted } else { false } })
        #expect(seen.contains { if case .reconnecting = $0 { true } else { false } })
        #expect(seen.contains(.connected))
        #expect(await eventually { states.value.last == .restored }, "restored follows connected: \(states.value)")
    }

    @Test func sameDaemonReconnectCatchesUpWithSince() async throws {
        // The daemon keeps history: after a reconnect to the same daemon the client asks for
        // what followed the last seq it saw, so an event published while it was away arrives
        // (replayed or live, whichever the timing gives) exactly once, and nothing is reported lost.
        let daemon = try TestDaemon()
        let client = try await connectedClient(daemon)
        defer { client.close() }
        let other = try await connectedClient(daemon)
        defer { other.close() }
        let errors = collectErrors(client)
        let states = recordStates(client)
        let got = LockedValue<[Int]>([])
        let sub = try client.subscribe(ChatLine.self, options: SubscriptionOptions(name: "line")) { line, _ in got.withLock { $0.append(line.n) } }
        try await sub.ready()
        try await other.publish(ChatLine(text: "a", n: 1))
        #expect(await eventually { got.value == [1] })
        client.loop.cutConnection()
        try await other.publish(ChatLine(text: "b", n: 2))
        #expect(await waitForReconnect(states))
        #expect(await eventually { sub.isActive })
        try await other.publish(ChatLine(text: "c", n: 3))
        #expect(await eventually { got.value == [1, 2, 3] })
        #expect(!errors.value.contains(.historyLost(subscription: "line", channel: "chat.lobby")))
    }

    @Test func neverPolicyStaysDisconnected() async throws {
        let daemon = try TestDaemon()
        let client = try await connectedClient(daemon, reconnect: .never)
        defer { client.close() }
        let states = recordStates(client)
        daemon.stop()
        #expect(await eventually { states.value.last == .disconnected(.closedByServer) })
        await #expect(throws: HeraldClientError.notConnected) { try await client.ping() }
        #expect(!states.value.contains(.reconnecting(attempt: 1)))
    }

    @Test func requestInFlightFailsWhenTheConnectionDrops() async throws {
        let daemon = try TestDaemon()
        let client = try await connectedClient(daemon, reconnect: .never)
        defer { client.close() }
        // SIGSTOP keeps the socket open but unanswered; the cut then drops it under the request.
        daemon.pause()
        let answer = Task { () async -> HeraldClientError? in
            do throws(HeraldClientError) {
                _ = try await client.stats()
                return nil
            } catch {
                return error
            }
        }
        try await Task.sleep(nanoseconds: 200_000_000)
        client.loop.cutConnection()
        #expect(await answer.value == .disconnected)
        daemon.resume()
    }
}
