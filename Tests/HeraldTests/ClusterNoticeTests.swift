import Foundation
@testable import Herald
import HeraldTestSupport
import Testing

/// The two frames a cluster node sends under faults (issue 31), faked by a `ScriptedDaemon`:
/// `gap` (events a subscription will never get: its owner is told, mirrors read their state
/// again) and `node_reset` (the node was declared down while alive: a lost connection, not a
/// fatal error).
@Suite struct ClusterNoticeTests {
    /// A client connected to `daemon`, with `alternate` to fail over to.
    private func client(_ daemon: ScriptedDaemon, alternate: ScriptedDaemon? = nil) async throws -> HeraldClient {
        let client = HeraldClient(configuration: ClientConfiguration(
            endpoint: .tcp(host: "127.0.0.1", port: daemon.port), reconnect: ReconnectPolicy(initialDelay: 0.05, maxDelay: 0.2),
            alternateEndpoints: alternate.map { [.tcp(host: "127.0.0.1", port: $0.port)] } ?? []))
        try await client.connect()
        return client
    }

    /// The name of the newest subscription the daemon got on `channel`.
    private func subscriptionName(_ daemon: ScriptedDaemon, on channel: String) -> String? {
        daemon.received.last { $0.op == "sub" && $0.ch == channel }?.sub
    }

    private func gets(_ daemon: ScriptedDaemon, _ channel: String) -> Int {
        daemon.received.filter { $0.op == "get" && $0.ch == channel }.count
    }

    @Test func gapFramesAreRead() throws {
        let frame = try #require(ServerFrame(Array(#"{"gap":"chat.lobby","sub":"feed","from":3,"to":7}"#.utf8)))
        #expect(frame.kind == "gap")
        #expect(EventGap(frame: frame) == EventGap(channel: "chat.lobby", subscription: "feed", seqs: 3...7))
        let one = try #require(ServerFrame(Array(#"{"gap":"a.b","sub":"s","from":4,"to":4}"#.utf8)))
        #expect(EventGap(frame: one)?.seqs == 4...4)
        for bad in [#"{"gap":"a.b","sub":"s","from":5,"to":4}"#, #"{"gap":"a.b","from":1,"to":2}"#,
                    #"{"gap":"a.b","sub":"s","from":"1","to":2}"#, #"{"gap":7,"sub":"s","from":1,"to":2}"#] {
            #expect(EventGap(frame: try #require(ServerFrame(Array(bad.utf8)))) == nil, "\(bad)")
        }
    }

    /// `onGap` runs where the handler runs, between the events before and after the gap.
    @Test func aGapReachesTheSubscriptionInOrderWithItsEvents() async throws {
        let daemon = try ScriptedDaemon()
        let client = try await client(daemon)
        defer { client.close() }
        let errors = collectErrors(client)
        let seen = LockedValue<[String]>([])
        let options = SubscriptionOptions(name: "feed", onGap: { gap in seen.withLock { $0.append("gap \(gap.seqs)") } })
        let feed = try client.subscribe(raw: Channel("chat", "lobby"), options: options) { _, metadata in
            seen.withLock { $0.append("event \(metadata.seq ?? 0)") }
        }
        try await feed.ready()
        daemon.send(#"{"event":"chat.lobby","sub":"feed","seq":1,"data":1}"#,
                    #"{"gap":"chat.lobby","sub":"feed","from":2,"to":4}"#,
                    #"{"event":"chat.lobby","sub":"feed","seq":5,"data":5}"#)
        #expect(await eventually { seen.value.count == 3 })
        #expect(seen.value == ["event 1", "gap 2...4", "event 5"])
        #expect(errors.value.isEmpty, "told the subscription, not the error handler: \(errors.value)")
    }

    /// Without `onGap` the error handler hears of it; a gap for an unknown name is skipped and
    /// a malformed one reported as such.
    @Test func aGapWithoutOnGapGoesToTheErrorHandler() async throws {
        let daemon = try ScriptedDaemon()
        let client = try await client(daemon)
        defer { client.close() }
        let errors = collectErrors(client)
        let feed = try client.subscribe(raw: Channel("chat", "lobby"), options: SubscriptionOptions(name: "feed")) { _, _ in }
        try await feed.ready()
        daemon.send(#"{"gap":"chat.lobby","sub":"gone","from":1,"to":1}"#,
                    #"{"gap":"chat.lobby","sub":"feed","from":9,"to":12}"#,
                    #"{"gap":"chat.lobby","sub":"feed","from":12}"#)
        #expect(await eventually { errors.value.count == 2 })
        #expect(errors.value.first == .gap(EventGap(channel: "chat.lobby", subscription: "feed", seqs: 9...12)))
        #expect({ if case .malformedFrame? = errors.value.last { true } else { false } }(), "\(errors.value)")
        #expect(feed.isActive, "a gap does not end the subscription")
    }

    /// A mirror told of a gap reads its value again with `get` and takes the newer one.
    @Test func aRemoteValueReadsItsValueAgainAfterAGap() async throws {
        let daemon = try ScriptedDaemon()
        daemon.setValue(#"{"mode":"light"}"#, rev: 3, at: "app.theme")
        let client = try await client(daemon)
        defer { client.close() }
        let errors = collectErrors(client)
        let mirror = try await client.remoteValue(Theme.self, at: Channel("app", "theme"))
        #expect(mirror.current.value == Theme(mode: "light") && mirror.current.rev == 3)
        #expect(gets(daemon, "app.theme") == 1)

        // Revs 4 and 5 were lost on the way; the daemon says so.
        daemon.setValue(#"{"mode":"dark"}"#, rev: 5, at: "app.theme")
        let name = try #require(subscriptionName(daemon, on: "app.theme"))
        daemon.send(#"{"gap":"app.theme","sub":"\#(name)","from":4,"to":5}"#)
        #expect(await eventually { mirror.current.rev == 5 })
        #expect(mirror.current.value == Theme(mode: "dark"))
        #expect(gets(daemon, "app.theme") == 2, "read again once")
        #expect(errors.value.isEmpty, "the mirror heals itself: \(errors.value)")
    }

    /// A list mirror told of a gap fetches the list again (counted as a resync).
    @Test func aRemoteListFetchesItsListAgainAfterAGap() async throws {
        let daemon = try ScriptedDaemon()
        daemon.setValue(#"["a"]"#, rev: 1, at: "app.todo")
        let client = try await client(daemon)
        defer { client.close() }
        let list = try await client.remoteList(String.self, at: Channel("app", "todo"))
        #expect(list.current.value == ["a"])

        daemon.setValue(#"["a","b","c"]"#, rev: 3, at: "app.todo")
        let name = try #require(subscriptionName(daemon, on: "app.todo"))
        daemon.send(#"{"gap":"app.todo","sub":"\#(name)","from":2,"to":3}"#)
        #expect(await eventually { list.current.rev == 3 })
        #expect(list.current.value == ["a", "b", "c"])
        #expect(list.resyncCount == 1)
        #expect(gets(daemon, "app.todo") == 2)
    }

    /// `node_reset` then a close: reported once, for information; the client moves to the next
    /// endpoint and restores its subscription there.
    @Test func aNodeResetIsAConnectionLossThatRestores() async throws {
        let reset = try ScriptedDaemon()
        let other = try ScriptedDaemon()
        let client = try await client(reset, alternate: other)
        defer { client.close() }
        let errors = collectErrors(client)
        let states = recordStates(client)
        let feed = try client.subscribe(raw: Channel("chat", "lobby"), options: SubscriptionOptions(name: "feed")) { _, _ in }
        try await feed.ready()

        reset.send(#"{"error":"node_reset","message":"this node was declared down by the cluster"}"#)
        reset.dropNewest()
        #expect(await reconnected(states))
        #expect(states.value.contains(.disconnected(.serverError(code: "node_reset"))), "\(states.value)")
        #expect(await eventually { other.received.contains { $0.op == "sub" && $0.sub == "feed" } }, "restored on the other endpoint")
        #expect(feed.isActive)
        try await Task.sleep(nanoseconds: 100_000_000)
        // (A subscription that never saw an event cannot catch up: `historyLost` too.)
        let resets = errors.value.filter { if case .nodeReset = $0 { true } else { false } }
        #expect(resets == [.nodeReset(message: "this node was declared down by the cluster")], "reported once: \(errors.value)")
        #expect(!errors.value.contains { if case .server = $0 { true } else { false } }, "not a server error: \(errors.value)")
    }
}
