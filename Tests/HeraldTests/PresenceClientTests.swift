import Herald
@testable import HeraldExamples
import HeraldTestSupport
import Testing

/// What an app shows of a member: its display name (sent in `hello` `info`).
struct Profile: Codable, Sendable, Equatable {
    var name: String
}

/// `RemotePresence` (issue 36, "Clients"): members with their info, joins and leaves through
/// the mirror and its `AsyncSequence`, counts past the listing bound, and a resync after a
/// dropped connection or a daemon restart; `hello` carries the instance that presence's
/// grace period matches.
@Suite struct PresenceClientTests {
    let room = Channel("room", 1)

    /// A client whose `hello` says `name` (and `instance`, when given). With `proxy` it
    /// connects through it first, and to the daemon itself after the proxy stops (a dropped
    /// connection, as a flaky network drops it).
    func member(_ daemon: TestDaemon, name: String, instance: String? = nil, through proxy: StallingProxy? = nil,
                reconnect: ReconnectPolicy = ReconnectPolicy(initialDelay: 0.05, maxDelay: 0.3)) async throws -> HeraldClient {
        let direct = Endpoint.tcp(host: "127.0.0.1", port: daemon.port)
        let configuration = ClientConfiguration(
            endpoint: proxy.map { .tcp(host: "127.0.0.1", port: $0.port) } ?? direct, name: name,
            reconnect: reconnect, alternateEndpoints: proxy == nil ? [] : [direct],
            instance: instance, info: try RawJSON(encoding: Profile(name: name)))
        let client = HeraldClient(configuration: configuration)
        try await client.connect()
        return client
    }

    /// Subscribes `client` to `channel`, which makes it a member.
    func join(_ client: HeraldClient, _ channel: Channel) async throws -> Subscription {
        let token = try client.subscribe(raw: channel) { _, _ in }
        try await token.ready()
        return token
    }

    @Test func membersAreListedWithTheirInfoAcrossPages() async throws {
        let daemon = try TestDaemon()
        let ada = try await member(daemon, name: "Ada", instance: "ipad-7f3a")
        let bob = try await member(daemon, name: "Bob")
        let cyd = try await member(daemon, name: "Cyd")
        let watcher = try await connectedClient(daemon, name: "watcher")
        defer { ada.close(); bob.close(); cyd.close(); watcher.close() }
        let tokens = [try await join(ada, room), try await join(bob, room), try await join(cyd, room),
                      try await join(ada, room)]   // a second subscription: still one member

        // Pages of one member each: the mirror follows `next` to the end.
        let presence = try await watcher.presence(of: room, info: Profile.self, options: PresenceOptions(pageSize: 1))
        #expect(presence.count == 3)
        #expect(presence.members.map(\.info) == [Profile(name: "Ada"), Profile(name: "Bob"), Profile(name: "Cyd")])
        #expect(presence.members.map(\.client) == [ada, bob, cyd].map { $0.serverInfo?.client ?? "" })
        #expect(presence.members.first?.instance == "ipad-7f3a", "the configured instance")
        #expect(presence.members.last?.instance == cyd.instance, "a UUID made for the client object")
        #expect(cyd.instance.count == 36)
        #expect(presence.members.first?.user == nil, "no auth: no user")
        #expect(!presence.isCountOnly)

        // The untyped form reads the instance, and decodes the app's own fields on request.
        let plain = try await watcher.presence(of: room)
        #expect(plain.members.map(\.info?.instance) == ["ipad-7f3a", bob.instance, cyd.instance])
        #expect(try plain.members.first?.info(as: Profile.self) == Profile(name: "Ada"))

        // One page at a time, as tools read it.
        let page = try await watcher.presencePage(of: room, limit: 2)
        #expect(page.count == 3)
        #expect(page.members.count == 2)
        let rest = try await watcher.presencePage(of: room, after: page.next, limit: 2)
        #expect(rest.members.map(\.client) == [cyd.serverInfo?.client])
        #expect(rest.next == nil)
        withExtendedLifetime(tokens) {}
    }

    @Test func joinsAndLeavesReachTheMirrorItsObserversAndItsChanges() async throws {
        let daemon = try TestDaemon()
        let watcher = try await connectedClient(daemon, name: "watcher")
        let ada = try await member(daemon, name: "Ada")
        defer { watcher.close(); ada.close() }
        let presence = try await watcher.presence(of: room, info: Profile.self)
        #expect(presence.count == 0)
        let changes = presence.changes()
        let seen = LockedValue<[String]>([])
        let observation = presence.observe(alertNow: false) { state in
            seen.withLock { $0.append(state.members.compactMap(\.info?.name).joined(separator: ",")) }
        }
        let collected = Task {
            var lines: [String] = []
            for await change in changes {
                switch change {
                case .joined(let member): lines.append("join \(member.info?.name ?? "?")")
                case .left(let member): lines.append("leave \(member.info?.name ?? "?")")
                case .count(let count): lines.append("count \(count)")
                case .nodeCount(let node, let count): lines.append("count \(count) at \(node)")
                case .resynced(let state): lines.append("resynced \(state.count)")
                }
                if lines.count == 2 { break }
            }
            return lines
        }

        let token = try await join(ada, room)
        #expect(await eventually { presence.count == 1 })
        #expect(presence.members.first?.info == Profile(name: "Ada"))
        #expect(presence.members.first?.client == ada.serverInfo?.client)
        token.cancel()
        #expect(await eventually { presence.count == 0 })
        #expect(await collected.value == ["join Ada", "leave Ada"])
        #expect(await eventually { seen.value == ["Ada", ""] })
        #expect(presence.resyncCount == 1, "no change needed a second read")
        #expect(presence.droppedChanges == 0)

        // A member that disconnects leaves too.
        let again = try await join(ada, room)
        #expect(await eventually { presence.count == 1 })
        ada.close()
        #expect(await eventually { presence.count == 0 && presence.members.isEmpty })
        withExtendedLifetime((observation, again)) {}
    }

    /// Joins and leaves while the mirror reads one-member pages: those about members already
    /// read apply to the read, the rest are left to the pages to come; the result is the
    /// daemon's list, with no departed member kept and no member missing.
    @Test func changesDuringAPagedReadEndInTheDaemonsList() async throws {
        let daemon = try TestDaemon()
        let watcher = try await connectedClient(daemon, name: "watcher")
        var clients: [HeraldClient] = []
        var tokens: [Subscription] = []
        for n in 0..<16 {
            let client = try await member(daemon, name: "m\(n)")
            clients.append(client)
            tokens.append(try await join(client, room))
        }
        var late: [HeraldClient] = []
        for n in 0..<8 { late.append(try await member(daemon, name: "late\(n)")) }
        defer { watcher.close(); for client in clients + late { client.close() } }

        let leaving = tokens
        let lateClients = late
        let churn = Task {
            var joined: [Subscription] = []
            for n in 0..<8 {
                leaving[n * 2].cancel()                                   // every other early member leaves
                joined.append(try await self.join(lateClients[n], self.room))
                try await Task.sleep(nanoseconds: 3_000_000)
            }
            return joined
        }
        let presence = try await watcher.presence(of: room, info: Profile.self, options: PresenceOptions(pageSize: 1))
        let joined = try await churn.value
        let expected = (0..<16).filter { $0 % 2 == 1 }.map { "m\($0)" } + (0..<8).map { "late\($0)" }
        #expect(await eventually { Set(presence.members.compactMap(\.info?.name)) == Set(expected) })
        try await drainOrdered(watcher)
        let listed = try await watcher.presencePage(of: room, limit: 1000)
        #expect(presence.members.map(\.client) == listed.members.map(\.client), "the daemon's list, in its order")
        #expect(presence.count == 16)
        #expect(presence.resyncCount == 1, "merged during the one read, not fixed by reading again")
        withExtendedLifetime((tokens, joined)) {}
    }

    @Test func aDroppedConnectionReadsTheMembersAgain() async throws {
        let daemon = try TestDaemon()
        // A slow reconnect, so the changes below happen while the watcher is away.
        let proxy = try StallingProxy(upstream: daemon.port)
        let watcher = try await member(daemon, name: "watcher", through: proxy, reconnect: ReconnectPolicy(initialDelay: 1.5, maxDelay: 1.5))
        let ada = try await member(daemon, name: "Ada")
        let bob = try await member(daemon, name: "Bob")
        defer { watcher.close(); ada.close(); bob.close() }
        let adaToken = try await join(ada, room)
        let presence = try await watcher.presence(of: room, info: Profile.self)
        #expect(presence.members.map(\.info?.name) == ["Ada"])
        let states = recordStates(watcher)

        // The watcher's connection drops; while it is away Ada leaves and Bob joins.
        proxy.stop()
        #expect(await eventually { states.value.contains { if case .disconnected = $0 { true } else { false } } })
        adaToken.cancel()
        let bobToken = try await join(bob, room)
        #expect(presence.members.map(\.info?.name) == ["Ada"], "nothing reached the watcher yet")
        #expect(await reconnected(states))
        #expect(await eventually { presence.members.map(\.info?.name) == ["Bob"] })
        #expect(presence.count == 1)
        #expect(presence.resyncCount == 2)
        withExtendedLifetime(bobToken) {}
    }

    @Test func aDaemonRestartReadsTheMembersAgain() async throws {
        let daemon = try TestDaemon()
        let watcher = try await connectedClient(daemon, name: "watcher")
        let ada = try await member(daemon, name: "Ada")
        defer { watcher.close(); ada.close() }
        let token = try await join(ada, room)
        let presence = try await watcher.presence(of: room, info: Profile.self)
        let before = try #require(presence.members.first?.client)
        let changes = presence.changes()
        let resynced = Task {
            for await change in changes {
                if case .resynced = change { return true }
            }
            return false
        }
        let errors = collectErrors(watcher)
        let states = recordStates(watcher)

        try daemon.restart()
        #expect(await reconnected(states))
        // Both clients come back; Ada's subscription is restored, so she is a member again,
        // under the client id her new connection got.
        #expect(await eventually(within: 20) { presence.count == 1 && presence.members.first?.client == ada.serverInfo?.client })
        #expect(await resynced.value, "the list was read again after the reconnect")
        #expect(presence.members.first?.info == Profile(name: "Ada"))
        #expect(!errors.value.contains { if case .historyLost = $0 { true } else { false } },
                "the mirror reads the list again: no lost history to report")
        withExtendedLifetime((token, before)) {}
    }

    @Test func pastMaxListedOnlyTheCountIsKeptThenTheListReturns() async throws {
        let daemon = try TestDaemon()
        let watcher = try await connectedClient(daemon, name: "watcher")
        let ada = try await member(daemon, name: "Ada")
        let bob = try await member(daemon, name: "Bob")
        defer { watcher.close(); ada.close(); bob.close() }
        let adaToken = try await join(ada, room)
        let bobToken = try await join(bob, room)
        let presence = try await watcher.presence(of: room, info: Profile.self, options: PresenceOptions(maxListed: 1))
        #expect(presence.isCountOnly)
        #expect(presence.count == 2)
        #expect(presence.members.isEmpty)

        bobToken.cancel()
        #expect(await eventually { !presence.isCountOnly && presence.members.map(\.info?.name) == ["Ada"] })
        #expect(presence.count == 1)
        withExtendedLifetime(adaToken) {}
    }

    @Test func aReconnectWithinTheGraceKeepsTheMemberWithNoLeaveOrJoin() async throws {
        let daemon = try TestDaemon(config: "presence_grace_ms: 3000")
        let watcher = try await connectedClient(daemon, name: "watcher")
        let proxy = try StallingProxy(upstream: daemon.port)
        let ada = try await member(daemon, name: "Ada", instance: "phone-1", through: proxy)
        defer { watcher.close(); ada.close() }
        let token = try await join(ada, room)
        let presence = try await watcher.presence(of: room, info: Profile.self)
        #expect(presence.count == 1)
        let raw = LockedValue<[String]>([])
        let events = try watcher.subscribe(raw: room.presenceChannel) { data, _ in
            raw.withLock { $0.append(data?.description ?? "") }
        }
        try await events.ready()
        let states = recordStates(ada)

        // Ada's connection drops; her client comes back (directly) with the same instance.
        let before = ada.serverInfo?.client
        proxy.stop()
        #expect(await reconnected(states))
        #expect(ada.serverInfo?.client != before)
        try await Task.sleep(nanoseconds: 500_000_000)
        #expect(raw.value.isEmpty, "no leave and no join within the grace: \(raw.value)")
        #expect(presence.count == 1)
        #expect(presence.members.first?.instance == "phone-1")

        // Her leave names her new connection, which the mirror never listed: it reads the
        // list again rather than keep a member who is gone.
        ada.close()
        #expect(await eventually { presence.count == 0 && presence.members.isEmpty })
        withExtendedLifetime((token, events)) {}
    }

    @Test func helloInfoNamesTheInstanceBesideTheAppsFields() async throws {
        let daemon = try TestDaemon()
        let watcher = try await connectedClient(daemon, name: "watcher")
        let own = HeraldClient(configuration: ClientConfiguration(
            endpoint: .tcp(host: "127.0.0.1", port: daemon.port), instance: "mine", info: RawJSON(#"{"instance":"app's","n":1}"#)))
        let empty = HeraldClient(configuration: ClientConfiguration(
            endpoint: .tcp(host: "127.0.0.1", port: daemon.port), instance: "e1", info: RawJSON(" { } ")))
        let scalar = HeraldClient(configuration: ClientConfiguration(
            endpoint: .tcp(host: "127.0.0.1", port: daemon.port), info: RawJSON("42")))
        defer { watcher.close(); own.close(); empty.close(); scalar.close() }
        var tokens: [Subscription] = []
        for client in [own, empty, scalar] {
            try await client.connect()
            tokens.append(try await join(client, room))
        }
        let page = try await watcher.presencePage(of: room)
        #expect(page.members.map { $0.rawInfo?.description } == [#"{"instance":"app's","n":1}"#, #"{"instance":"e1"}"#, "42"])
        #expect(page.members.map(\.instance) == ["app's", "e1", nil])
        withExtendedLifetime(tokens) {}
    }

    /// `$presence` event data as apps with their own subscription read it; in cluster mode a
    /// count names its node and is that node's own count.
    @Test func presenceEventsParse() throws {
        let join = PresenceChange<Profile>(event: RawJSON(#"{"action":"join","client":"c4","user":"ada","info":{"name":"Ada","instance":"i"}}"#))
        guard case .joined(let member)? = join else { Issue.record("not a join: \(String(describing: join))"); return }
        #expect(member.client == "c4" && member.user == "ada" && member.info == Profile(name: "Ada") && member.instance == "i")
        guard case .left(let gone)? = PresenceChange<Profile>(event: RawJSON(#"{"action":"leave","client":"c4","info":7}"#)) else {
            Issue.record("not a leave")
            return
        }
        #expect(gone.info == nil && gone.rawInfo == RawJSON("7"), "info that is not a Profile stays raw")
        guard case .count(5)? = PresenceChange<Profile>(event: RawJSON(#"{"action":"count","count":5}"#)) else {
            Issue.record("not a count")
            return
        }
        guard case .nodeCount("n2", 3)? = PresenceChange<Profile>(event: RawJSON(#"{"action":"count","count":3,"node":"n2"}"#)) else {
            Issue.record("not a node's count")
            return
        }
        #expect(PresenceChange<Profile>(event: RawJSON(#"{"action":"wave","client":"c1"}"#)) == nil, "a later daemon's action")
        #expect(PresenceChange<Profile>(event: RawJSON(#"{"action":"join"}"#)) == nil, "a join without a client")
        #expect(PresenceChange<Profile>(event: RawJSON("[1]")) == nil)
    }

    @Test func presenceOfAPatternOrADollarChannelIsRefused() async throws {
        let daemon = try TestDaemon()
        let watcher = try await connectedClient(daemon, name: "watcher")
        defer { watcher.close() }
        let pattern = await thrownError { () async throws(HeraldClientError) in try await watcher.presence(of: Channel("room", .one)) }
        #expect({ if case .badChannel = pattern { true } else { false } }())
        let dollar = await thrownError { () async throws(HeraldClientError) in try await watcher.presence(of: Channel(verbatim: "$sys.x")) }
        #expect({ if case .badChannel = dollar { true } else { false } }())
    }
}

/// The guide's presence examples (Examples/PresenceExamples.swift) against a real daemon.
@Suite struct PresenceExampleTests {
    @Test func theRoomExamplesListGreetAndName() async throws {
        let daemon = try TestDaemon()
        let room = Channel("room", "lobby")
        let watcher = try roomClient(port: daemon.port, installID: "watcher-install", name: "Watcher")
        let ada = try roomClient(port: daemon.port, installID: "ada-install", name: "Ada")
        try await watcher.connect()
        try await ada.connect()
        defer { watcher.close(); ada.close() }
        let lobby = try await people(in: room, watcher)
        #expect(lobby.count == 0)
        let names = await roomNames(lobby)
        let greeted = LockedValue<[String]>([])
        let greeting = Task { await greetArrivals(lobby) { name in greeted.withLock { $0.append(name) } } }
        try await Task.sleep(nanoseconds: 100_000_000)   // the stream is made when the task starts

        let token = try ada.subscribe(raw: room) { _, _ in }
        try await token.ready()
        #expect(await eventually { greeted.value == ["Ada"] })
        #expect(lobby.members.first?.instance == "ada-install")
        var named: [String]?
        for _ in 0..<250 where named != ["Ada"] {
            named = await names.value
            try await Task.sleep(nanoseconds: 20_000_000)
        }
        #expect(named == ["Ada"], "the main-actor mirror of the names")
        greeting.cancel()
        withExtendedLifetime(token) {}
    }
}
