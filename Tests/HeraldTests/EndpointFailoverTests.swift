import Foundation
@testable import Herald
import HeraldTestSupport
import Testing

/// A client given several endpoints (issue 15: "its clients reconnect to another node"):
/// when its node dies it connects to the next one and gets its subscriptions back, with the
/// events published meanwhile replayed from the cluster's history; and (issue 31) everything
/// else it held too: its locks, links, declared channels, signal handlers and mirrors, the
/// `conflict`s its own previous connection causes until the dead node is reaped retried,
/// and what can never be restored reported.
@Suite(.enabled(if: TestRedis.isAvailable, "needs Debian's redis-server"), .serialized)
struct EndpointFailoverTests {
    let editor = Channel("ui", "editor")
    let home = Channel("ui", "home")
    let document = Channel("doc", 7)
    let muted = Channel("muted", "feed")
    let theme = Channel("app", "theme")

    private func node(_ redis: TestRedis, _ name: String) throws -> TestDaemon {
        try TestDaemon(config: #"cluster: { redis: "redis://127.0.0.1:\#(redis.port)", node: "\#(name)", node_timeout_ms: 1000 },"#)
    }

    /// A client on `first` that fails over to `alternate`.
    private func failingOverClient(_ first: Int, to alternate: Int, restoreRetryTimeout: Double = 30,
                                   connectTimeout: Double = 5) -> HeraldClient {
        HeraldClient(configuration: ClientConfiguration(
            endpoint: .tcp(host: "127.0.0.1", port: first), name: "app", reconnect: ReconnectPolicy(initialDelay: 0.05, maxDelay: 0.5),
            connectTimeout: connectTimeout, alternateEndpoints: [.tcp(host: "127.0.0.1", port: alternate)],
            restoreRetryTimeout: restoreRetryTimeout))
    }

    /// Asks `ask` every 50 ms until it gives `expected` (or 15 s pass); returns the last answer.
    private func polled<T: Equatable & Sendable>(_ expected: T, _ ask: () async -> T) async -> T {
        var seen = await ask()
        for _ in 0..<300 where seen != expected {
            try? await Task.sleep(nanoseconds: 50_000_000)
            seen = await ask()
        }
        return seen
    }

    /// Whether `error` is a restore failure of `kind` on `channel` because of `code`.
    private func isRestoreFailure(_ error: HeraldClientError, _ kind: RestoreKind, _ channel: Channel, _ code: String) -> Bool {
        guard case .restoreFailed(let failedKind, let failedChannel, let cause) = error else { return false }
        return failedKind == kind && failedChannel == channel.name && isServerError(cause, code)
    }

    @Test func aClientFailsOverToTheNextNodeWithItsSubscriptionsAndNoGap() async throws {
        let redis = try TestRedis()
        let first = try node(redis, "a")
        let second = try node(redis, "b")
        let client = HeraldClient(configuration: ClientConfiguration(
            endpoint: .tcp(host: "127.0.0.1", port: first.port), reconnect: ReconnectPolicy(initialDelay: 0.05, maxDelay: 0.5),
            alternateEndpoints: [.tcp(host: "127.0.0.1", port: second.port)]))
        defer { client.close() }
        try await client.connect()
        let errors = collectErrors(client)
        let states = recordStates(client)
        let seen = LockedValue<[Int]>([])
        let lines = try client.subscribe(ChatLine.self) { line, _ in seen.withLock { $0.append(line.n) } }
        try await lines.ready()
        let publisher = try await connectedClient(second, name: "pub")
        defer { publisher.close() }
        for n in 1...3 { try await publisher.publish(ChatLine(text: "before", n: n)) }
        #expect(await eventually { seen.value == [1, 2, 3] })

        first.stop()
        for n in 4...6 { try await publisher.publish(ChatLine(text: "meanwhile", n: n)) }
        #expect(await reconnected(states))
        #expect(client.serverInfo?.node == "b", "connected to the other node")
        for n in 7...8 { try await publisher.publish(ChatLine(text: "after", n: n)) }
        #expect(await eventually { seen.value.count >= 8 })
        #expect(seen.value == Array(1...8), "replayed from the cluster's history, each once, in order")
        #expect(!errors.value.contains { if case .historyLost = $0 { true } else { false } }, "\(errors.value)")
    }

    /// Every restorable kind comes back on the other node: the declared channel and the link
    /// once the dead node's records are reaped (refused `conflict` until then, and still wanted
    /// meanwhile), the lock, the subscription, the signal handler and the mirror at once.
    /// Checked from another client's point of view, with nothing reported as lost.
    @Test func everyRestorableKindComesBackOnTheOtherNode() async throws {
        let redis = try TestRedis()
        let first = try node(redis, "a")
        let second = try node(redis, "b")
        let client = failingOverClient(first.port, to: second.port)
        defer { client.close() }
        try await client.connect()
        let errors = collectErrors(client)
        let states = recordStates(client)
        let observer = try await connectedClient(second, name: "observer")
        defer { observer.close() }
        let observerID = try #require(observer.serverInfo?.client)

        let lines = LockedValue<[Int]>([])
        let feed = try client.subscribe(ChatLine.self, options: SubscriptionOptions(name: "feed")) { line, _ in
            lines.withLock { $0.append(line.n) }
        }
        let screen = try client.handle(raw: home, options: SubscriptionOptions(name: "screen")) { _, _ in .stop }
        try await feed.ready()
        try await screen.ready()
        try await client.link(editor, to: home)
        try await client.declare(document)
        let watch = try observer.subscribe(raw: muted, options: SubscriptionOptions(name: "watch")) { _, _ in }
        try await watch.ready()
        try await client.lock(muted)
        let mirror = try await client.remoteValue(Theme.self, at: theme)
        #expect(try await observer.signal(raw: nil, on: editor, timeout: .seconds(5)).result().at == "ui.home")
        #expect(try await observer.locks(on: muted).locked == ["\(observerID)/watch"])
        // A seq to catch up from (a subscription that never had an event cannot, and says so).
        try await observer.publish(ChatLine(text: "before", n: 1))
        #expect(await eventually { lines.value == [1] })

        first.stop()
        #expect(await reconnected(states))
        #expect(client.serverInfo?.node == "b", "connected to the other node")
        let newID = try #require(client.serverInfo?.client)
        #expect(client.links == [ChannelLink(channel: editor, parent: home)], "wanted while its conflict is retried")
        #expect(client.declaredChannels == [document], "wanted while its conflict is retried")

        // Owned again once node a is reaped (node_timeout_ms 1000, plus up to a second).
        let owner = await polled(newID) { (try? await observer.channels(matching: document))?.first?.owner ?? "" }
        #expect(owner == newID, "the declared channel is this client's again")
        let link = await polled("ui.home") { (try? await observer.channels(matching: editor))?.first?.link ?? "" }
        #expect(link == "ui.home", "the link is made again")
        let handled = try await observer.signal(raw: nil, on: editor, timeout: .seconds(5)).result()
        #expect(handled.at == "ui.home" && handled.handledBy == "\(newID)/screen", "link and handler restored: \(handled)")
        #expect(try await observer.locks(on: muted).locked == ["\(observerID)/watch"], "the lock holds again (node a's went with it)")
        try await observer.publish(ChatLine(text: "after", n: 2))
        #expect(await eventually { lines.value == [1, 2] }, "the subscription is restored")
        try await observer.set(Theme(mode: "dark"), at: theme)
        #expect(await eventually { mirror.current.value == Theme(mode: "dark") }, "the mirror is restored")
        #expect(feed.isActive && screen.isActive)
        #expect(client.links == [ChannelLink(channel: editor, parent: home)])
        #expect(client.declaredChannels == [document])
        let lost = errors.value.filter { error in
            switch error {
            case .restoreFailed, .subscriptionEnded, .historyLost: return true
            default: return false
            }
        }
        #expect(lost.isEmpty, "nothing dropped: \(errors.value)")
    }

    /// A node paused past `node_timeout_ms` is declared down while alive; when it resumes it
    /// closes its clients with `node_reset` (fail-stop, issue 31). The client takes it as a
    /// lost connection: it moves to the other node and restores its declared channel and its
    /// subscription, reporting the reset once, informational.
    @Test func aNodeResetMovesTheClientAndRestoresWhatItHeld() async throws {
        let redis = try TestRedis()
        let first = try node(redis, "a")
        let second = try node(redis, "b")
        let client = failingOverClient(first.port, to: second.port)
        defer { client.close() }
        try await client.connect()
        let errors = collectErrors(client)
        let observer = try await connectedClient(second, name: "observer")
        defer { observer.close() }
        let lines = LockedValue<[Int]>([])
        let feed = try client.subscribe(ChatLine.self, options: SubscriptionOptions(name: "feed")) { line, _ in
            lines.withLock { $0.append(line.n) }
        }
        try await feed.ready()
        try await client.declare(document)
        try await observer.publish(ChatLine(text: "before", n: 1))
        #expect(await eventually { lines.value == [1] })

        first.pause()
        try await Task.sleep(nanoseconds: 3_000_000_000)
        first.resume()
        #expect(await eventually(within: 15) { errors.value.contains { if case .nodeReset = $0 { true } else { false } } },
                "the reset is reported: \(errors.value)")
        let newID = await polled("b") { client.serverInfo?.node ?? "" } == "b" ? client.serverInfo?.client ?? "" : ""
        let owner = await polled(newID) { (try? await observer.channels(matching: document))?.first?.owner ?? "" }
        #expect(!newID.isEmpty && owner == newID, "the declared channel is the client's again, on node b")
        try await observer.publish(ChatLine(text: "after", n: 2))
        #expect(await eventually { lines.value == [1, 2] }, "the subscription is restored: \(lines.value)")
        #expect(errors.value.filter { if case .nodeReset = $0 { true } else { false } }.count == 1, "\(errors.value)")
    }

    /// A restore that can never succeed (a client on the live node took the channel and the
    /// link while this one was away) is retried for the configured bound, then forgotten and
    /// reported to the caller as `restoreFailed`, with the daemon's `conflict`.
    @Test func aRestoreThatCannotSucceedIsReportedAfterTheBound() async throws {
        let redis = try TestRedis()
        let first = try node(redis, "a")
        let second = try node(redis, "b")
        // The client reaches node b through a proxy held stalled until the rival won.
        let proxy = try StallingProxy(upstream: second.port)
        defer { proxy.stop() }
        let bound = 1.5
        let client = failingOverClient(first.port, to: proxy.port, restoreRetryTimeout: bound, connectTimeout: 1)
        defer { client.close() }
        try await client.connect()
        let reported = LockedValue<[(error: HeraldClientError, at: Date)]>([])
        client.setErrorHandler { error in reported.withLock { $0.append((error, Date())) } }
        let states = recordStates(client)
        try await client.declare(document)
        try await client.link(editor, to: home)
        let rival = try await connectedClient(second, name: "rival")
        defer { rival.close() }

        proxy.stall()
        first.stop()
        // Refused `conflict` until node a is reaped, then the rival's.
        var declared = false
        var linked = false
        for _ in 0..<300 where !(declared && linked) {
            if !declared { declared = await thrownError { () async throws(HeraldClientError) in try await rival.declare(document) } == nil }
            if !linked { linked = await thrownError { () async throws(HeraldClientError) in try await rival.link(editor, to: Channel("ui", "other")) } == nil }
            if !(declared && linked) { try await Task.sleep(nanoseconds: 50_000_000) }
        }
        #expect(declared && linked)
        proxy.resume()
        #expect(await reconnected(states))
        let back = Date()
        #expect(client.declaredChannels == [document] && client.links == [ChannelLink(channel: editor, parent: home)],
                "wanted while retried")

        let failures = { reported.value.filter { if case .restoreFailed = $0.error { true } else { false } } }
        #expect(await eventually(within: 10) { failures().count == 2 }, "\(reported.value.map(\.error))")
        #expect(failures().contains { isRestoreFailure($0.error, .instanceChannel, document, "conflict") })
        #expect(failures().contains { isRestoreFailure($0.error, .link(parent: "ui.home"), editor, "conflict") })
        for failure in failures() {
            #expect(failure.at.timeIntervalSince(back) > bound - 0.3, "reported only after the bound: \(failure.at.timeIntervalSince(back)) s")
        }
        #expect(client.declaredChannels.isEmpty && client.links.isEmpty, "forgotten once reported")
        #expect(try await rival.channels(matching: document).first?.owner == rival.serverInfo?.client)
        #expect(try await rival.channels(matching: editor).first?.link == "ui.other")
    }

    @Test func endpointsAreTriedInOrderFromTheFirst() {
        let configuration = ClientConfiguration(endpoint: .unix(path: "/a"), alternateEndpoints: [.unix(path: "/b"), .unix(path: "/c")])
        #expect(configuration.endpoints == [.unix(path: "/a"), .unix(path: "/b"), .unix(path: "/c")])
        #expect(ClientConfiguration(endpoint: .unix(path: "/a")).endpoints == [.unix(path: "/a")])
    }
}
