import Foundation
@testable import Herald
@testable import HeraldExamples
import HeraldTestSupport
import Testing

/// Links in the client: a linked channel's signals go on at its parent, and the link is made
/// again after the daemon restarts.
@Suite struct LinkTests {
    let editor = Channel("ui", "editor")
    let home = Channel("ui", "home")

    /// Where a signal raised on `channel` was handled (nil: nobody stopped it).
    private func handledAt(_ sender: HeraldClient, _ channel: Channel) async throws -> String? {
        try await sender.signal(raw: nil, on: channel, timeout: .seconds(5)).result().at
    }

    /// The link the daemon lists for `channel`, asked until `expected` shows or time runs out.
    private func daemonLink(_ client: HeraldClient, _ channel: Channel, becomes expected: String?) async -> String? {
        var seen: String?
        for _ in 0..<200 {
            seen = (try? await client.channels(matching: channel))?.first?.link
            if seen == expected { return seen }
            try? await Task.sleep(nanoseconds: 50_000_000)
        }
        return seen
    }

    @Test func linkRoutesSignalsAndIsRestoredAfterDaemonRestart() async throws {
        let daemon = try TestDaemon()
        let screens = try await connectedClient(daemon, name: "screens")
        let handler = try await connectedClient(daemon, name: "home")
        let sender = try await connectedClient(daemon, name: "sender")
        defer { screens.close(); handler.close(); sender.close() }
        let errors = collectErrors(screens)
        let states = recordStates(screens)
        let offers = LockedValue<[String]>([])
        let homeHandler = try handler.handle(raw: home, options: SubscriptionOptions(name: "home")) { _, context in
            offers.withLock { $0.append(context.origin.name) }
            return .stop
        }
        try await homeHandler.ready()
        #expect(try await handledAt(sender, editor) == nil, "unlinked: ui.editor goes on to ui")

        try await pushScreen(screens, editor, over: home)
        #expect(screens.links == [ChannelLink(channel: editor, parent: home)])
        #expect(try await screens.channels(matching: editor).first?.link == "ui.home")
        #expect(try await handledAt(sender, editor) == "ui.home")

        try daemon.restart()
        #expect(await reconnected(states))
        #expect(await daemonLink(sender, editor, becomes: "ui.home") == "ui.home", "the link is made again")
        #expect(await eventually(within: 20) { homeHandler.isActive })
        var at: String?
        for _ in 0..<100 {
            // The handler's client reconnects on its own schedule.
            at = try? await handledAt(sender, editor)
            if at == "ui.home" { break }
            try await Task.sleep(nanoseconds: 50_000_000)
        }
        #expect(at == "ui.home")
        #expect(offers.value.allSatisfy { $0 == "ui.editor" })

        try await popScreen(screens, editor)
        #expect(screens.links.isEmpty)
        #expect(await daemonLink(sender, editor, becomes: nil) == nil)
        #expect(try await handledAt(sender, editor) == nil)
        // The restart is a new data set: said once, and nothing else went wrong.
        #expect(errors.value.filter { if case .epochChanged = $0 { false } else { true } }.isEmpty, "\(errors.value)")
        #expect(errors.value.count <= 1, "\(errors.value)")
    }

    @Test func refusedLinksThrowAndAreNotKept() async throws {
        let daemon = try TestDaemon()
        let first = try await connectedClient(daemon, name: "first")
        let second = try await connectedClient(daemon, name: "second")
        defer { first.close(); second.close() }
        try await first.link(editor, to: home)
        let conflict = await thrownError { () async throws(HeraldClientError) in try await second.link(editor, to: Channel("ui", "other")) }
        #expect(isServerError(conflict, "conflict"))
        let cycle = await thrownError { () async throws(HeraldClientError) in try await first.link(home, to: editor) }
        #expect(isServerError(cycle, "cycle"))
        #expect(second.links.isEmpty)
        #expect(first.links == [ChannelLink(channel: editor, parent: home)])
        let notMine = await thrownError { () async throws(HeraldClientError) in try await second.unlink(editor) }
        #expect(isServerError(notMine, "forbidden"))
        // Linking again moves the link.
        try await first.link(editor, to: Channel("ui", "list"))
        #expect(first.links == [ChannelLink(channel: editor, parent: Channel("ui", "list"))])
        #expect(try await first.channels(matching: editor).first?.link == "ui.list")
        await #expect(throws: HeraldClientError.self) { try await first.link(Channel("ui", .one), to: home) }
    }
}
