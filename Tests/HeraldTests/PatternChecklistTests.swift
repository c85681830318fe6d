import Foundation
@testable import Herald
@testable import HeraldExamples
import HeraldTestSupport
import Testing

/// The app developer's check list of docs/client.md ("Patterns"), one test per item, each
/// against a real `heraldd`; `everyPatternOfTheGuideIsATest` keeps the list and the tests
/// in step.
@Suite struct PatternChecklistTests {
    @Test func everyPatternOfTheGuideIsATest() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let guide = try String(contentsOf: root.appendingPathComponent("docs/client.md"), encoding: .utf8)
        let section = try #require(guide.components(separatedBy: "## Patterns\n").dropFirst().first?.components(separatedBy: "\n## ").first)
        var listed: [String] = []
        for piece in section.components(separatedBy: "`PatternChecklistTests.").dropFirst() {
            if let name = piece.split(separator: "`").first { listed.append(String(name)) }
        }
        let source = try String(contentsOf: URL(fileURLWithPath: #filePath), encoding: .utf8)
        let marker = "@" + "Test func "
        var tests: [String] = []
        for line in source.split(separator: "\n") {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            guard trimmed.hasPrefix(marker), let name = trimmed.dropFirst(marker.count).split(separator: "(").first else { continue }
            if name != "everyPatternOfTheGuideIsATest" { tests.append(String(name)) }
        }
        #expect(listed.count >= 10)
        #expect(listed == tests, "the list in docs/client.md and the tests here, in the same order")
    }

    @Test func aRequestReachesAResponder() async throws {
        let daemon = try TestDaemon()
        let client = try await connectedClient(daemon)
        defer { client.close() }
        #expect(await addRemotely(client, 1, 2) == "no adder is running")
        let adder = try startAdder(client)
        try await adder.ready()
        #expect(await addRemotely(client, 1, 2) == "sum 3")
    }

    @Test func aLockPausesLiveUpdates() async throws {
        let daemon = try TestDaemon()
        let client = try await connectedClient(daemon)
        defer { client.close() }
        let seen = LockedValue<[RawJSON?]>([])
        let settings = Channel("app", "settings", "theme")
        let watcher = try client.subscribe(raw: settings) { data, _ in seen.withLock { $0.append(data) } }
        try await watcher.ready()
        try await editWithoutLiveUpdates(client) {
            _ = try? await client.publish(raw: RawJSON("1"), to: settings)
        }
        try await client.publish(raw: RawJSON("2"), to: settings)
        #expect(await eventually { seen.value.count == 1 })
        try await drainOrdered(client)
        #expect(seen.value == [RawJSON("2")], "the edit's own change was silenced")
    }

    @Test func anInstanceChannelEndsWithItsModel() async throws {
        let daemon = try TestDaemon()
        let client = try await connectedClient(daemon, name: "editor")
        let follower = try await connectedClient(daemon, name: "viewer")
        defer { client.close(); follower.close() }
        var model: DocumentModel? = DocumentModel(client: client, id: 7)
        try await model?.open()
        let token = try follower.subscribe(raw: Channel("doc", 7)) { _, _ in }
        try await token.ready()
        #expect(client.declaredChannels == [Channel("doc", 7)])
        model = nil
        #expect(try await token.ended() == .removed(channel: "doc.7"))
    }

    @Test func aSignalBubblesThroughALinkToItsHandler() async throws {
        let daemon = try TestDaemon()
        let client = try await connectedClient(daemon)
        defer { client.close() }
        let handler = try handleSaves(client)
        try await handler.ready()
        #expect(try await requestSave(client, revision: 3) != nil, "the editor's handler took it")
        let sheet = Channel("app", "sheet")
        let unlinked = try await client.signal(SaveRequest(revision: 4), on: sheet, timeout: .seconds(5)).result()
        #expect(unlinked.handledBy == nil, "without the link the sheet's next level is `app`: nobody handles it")
        try await pushScreen(client, sheet, over: SaveRequest.channel)
        let result = try await client.signal(SaveRequest(revision: 5), on: sheet, timeout: .seconds(5)).result()
        #expect(result.at == "app.editor", "from the sheet through its link to the editor's handler")
        try await popScreen(client, sheet)
        #expect(client.links.isEmpty)
    }

    @Test func deliveryModesRunWhereAsked() async throws {
        let daemon = try TestDaemon()
        let client = try await connectedClient(daemon)
        defer { client.close() }
        // Marks the main queue, so a handler can tell it runs there without trapping.
        let mainKey = DispatchSpecificKey<Int>()
        DispatchQueue.main.setSpecific(key: mainKey, value: 1)
        let onMain = LockedValue<[Bool]>([])
        let ordered = LockedValue<[Int]>([])
        let background = LockedValue<Int>(0)
        let main = try client.subscribe(ChatLine.self, options: SubscriptionOptions(delivery: .mainActor)) { _, _ in
            onMain.withLock { $0.append(DispatchQueue.getSpecific(key: mainKey) == 1) }
        }
        let inOrder = try client.subscribe(ChatLine.self, options: SubscriptionOptions(delivery: .ordered)) { line, _ in
            ordered.withLock { $0.append(line.n) }
        }
        let anywhere = try client.subscribe(ChatLine.self, options: SubscriptionOptions(delivery: .background)) { _, _ in
            background.withLock { $0 += 1 }
        }
        for token in [main, inOrder, anywhere] { try await token.ready() }
        for n in 1...50 { try client.post(ChatLine(text: "x", n: n)) }
        #expect(await eventually { ordered.value.count == 50 && background.value == 50 && onMain.value.count == 50 })
        #expect(ordered.value == Array(1...50), "ordered: in arrival order")
        #expect(onMain.value.allSatisfy { $0 }, "mainActor: on the main queue")
    }

    @Test func aListMirrorFollowsEveryEdit() async throws {
        let daemon = try TestDaemon()
        let client = try await connectedClient(daemon)
        let other = try await connectedClient(daemon, name: "other")
        defer { client.close(); other.close() }
        let todo = Channel("todo", "home")
        let mine = try await client.remoteList(String.self, at: todo)
        let theirs = try await other.remoteList(String.self, at: todo)
        try await mine.append("milk")
        try await theirs.splice(at: 0, insert: ["eggs"])
        try await mine.assign("oat milk", at: 1)
        #expect(await eventually { mine.current.value == ["eggs", "oat milk"] && theirs.current.value == ["eggs", "oat milk"] })
    }

    @Test func everythingIsRestoredAfterARestartWithOneNotice() async throws {
        let daemon = try TestDaemon()
        let client = try await connectedClient(daemon)
        defer { client.close() }
        let errors = collectErrors(client)
        let got = LockedValue<[Int]>([])
        let feed = try client.subscribe(ChatLine.self, options: SubscriptionOptions(name: "feed")) { line, _ in got.withLock { $0.append(line.n) } }
        let quiet = try client.subscribe(raw: Channel("quiet", "room")) { _, _ in }
        try await feed.ready()
        try await quiet.ready()
        let model = DocumentModel(client: client, id: 9)
        try await model.open()
        try await pushScreen(client, Channel("app", "sheet"), over: Channel("app", "editor"))
        try await client.publish(ChatLine(text: "before", n: 1))
        #expect(await eventually { got.value == [1] })

        let states = recordStates(client)
        try daemon.restart()
        #expect(await eventually { states.value.contains { if case .disconnected = $0 { true } else { false } } })
        await waitUntilRestored(client)
        #expect(try await client.channels(matching: Channel("doc", 9)).first?.owner == client.serverInfo?.client)
        #expect(try await client.channels(matching: Channel("app", "sheet")).first?.link == "app.editor")
        #expect(Set(try await client.serverSubscriptions().map(\.sub)) == ["feed", quiet.name])
        #expect(errors.value.count == 1, "one notice: \(errors.value)")
        #expect(feed.recovered == false && quiet.recovered == nil)
        withExtendedLifetime(model) {}
    }

    @Test func backgroundAndForegroundCatchUp() async throws {
        let daemon = try TestDaemon()
        let client = try await connectedClient(daemon)
        let publisher = try await connectedClient(daemon, name: "pub")
        defer { client.close(); publisher.close() }
        let got = LockedValue<[Int]>([])
        let feed = try client.subscribe(ChatLine.self) { line, _ in got.withLock { $0.append(line.n) } }
        try await feed.ready()
        try await publisher.publish(ChatLine(text: "seen", n: 1))
        #expect(await eventually { got.value == [1] })
        sceneBecame(active: false, client)
        #expect(await eventually { client.connectionState == .suspended })
        for n in 2...3 { try await publisher.publish(ChatLine(text: "away", n: n)) }
        sceneBecame(active: true, client)
        await waitUntilRestored(client)
        #expect(await eventually { got.value == [1, 2, 3] })
    }

    @Test func offlinePublishesArriveOnce() async throws {
        let daemon = try TestDaemon()
        let client = offlineCapableClient(port: daemon.port)
        try await client.connect()
        defer { client.close() }
        let got = LockedValue<[Int]>([])
        let feed = try client.subscribe(ChatLine.self) { line, _ in got.withLock { $0.append(line.n) } }
        try await feed.ready()
        daemon.stop()
        #expect(await eventually { !client.connectionState.isConnected })
        for n in 1...500 { try client.post(ChatLine(text: "offline", n: n)) }
        #expect(throws: HeraldClientError.offlineQueueFull(count: 500, bytes: 256 << 10)) { try client.post(ChatLine(text: "501", n: 501)) }
        try daemon.restart()
        #expect(await eventually(within: 30) { got.value.count >= 500 })
        try await drainOrdered(client)
        #expect(got.value == Array(1...500))
    }

    @Test func aFastProducerWaitsForRoom() async throws {
        let daemon = try TestDaemon()
        var configuration = ClientConfiguration(endpoint: .tcp(host: "127.0.0.1", port: daemon.port))
        configuration.maxOutboundBytes = 16 << 10
        let client = HeraldClient(configuration: configuration)
        try await client.connect()
        let reader = try await connectedClient(daemon, name: "reader")
        defer { client.close(); reader.close() }
        let got = LockedValue<Int>(0)
        let feed = try reader.subscribe(ChatLine.self) { _, _ in got.withLock { $0 += 1 } }
        try await feed.ready()
        let lines = (1...5_000).map { ChatLine(text: String(repeating: "x", count: 200), n: $0) }
        try await postAll(lines, client)
        #expect(await eventually(within: 30) { got.value == 5_000 }, "\(got.value)")
    }
}
