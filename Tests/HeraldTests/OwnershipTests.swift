import Foundation
@testable import Herald
import HeraldTestSupport
import Testing

/// A plain view model: not `Sendable`, not isolated; it owns a channel and a link.
final class PlainViewModel {
    var title = "car 7"
}

/// A view model that ends its channel in `deinit`, synchronously.
final class RemovingViewModel {
    let client: HeraldClient
    let channel: Channel

    init(client: HeraldClient, channel: Channel) {
        self.client = client
        self.channel = channel
    }

    deinit { client.scheduleRemoval(of: channel) }
}

/// A main-actor view model, as SwiftUI apps have them.
@MainActor final class ScreenModel {
    var visible = true
}

/// Objects own things (issue 38): declared channels and links that end with their owner, and
/// a synchronous removal safe in `deinit`, against a real `heraldd`.
@Suite struct OwnershipTests {
    private let car = Channel("car", "7")
    private let editor = Channel("ui", "editor")
    private let home = Channel("ui", "home")

    /// Subscribes `follower` to `channel`, returning its token once the daemon confirmed it.
    private func follow(_ follower: HeraldClient, _ channel: Channel) async throws -> Subscription {
        let token = try follower.subscribe(raw: channel) { _, _ in }
        try await token.ready()
        return token
    }

    @Test func aDeclaredChannelEndsWithItsPlainOwner() async throws {
        let daemon = try TestDaemon()
        let client = try await connectedClient(daemon, name: "owner")
        let follower = try await connectedClient(daemon, name: "view")
        defer { client.close(); follower.close() }
        var model: PlainViewModel? = PlainViewModel()
        try await client.declare(car, owner: try #require(model))
        let token = try await follow(follower, car)
        #expect(client.declaredChannels == [car])

        try await Task.sleep(nanoseconds: 1_200_000_000)
        #expect(token.isActive, "the owner lives: the channel stays")
        model = nil
        #expect(try await token.ended() == .removed(channel: "car.7"))
        #expect(client.declaredChannels.isEmpty)
        #expect(try await follower.channels(matching: car).first?.owner == nil)
    }

    @Test func aLinkEndsWithItsOwner() async throws {
        let daemon = try TestDaemon()
        let client = try await connectedClient(daemon, name: "screens")
        defer { client.close() }
        var model: PlainViewModel? = PlainViewModel()
        try await client.link(editor, to: home, owner: try #require(model))
        #expect(try await client.channels(matching: editor).first?.link == "ui.home")
        model = nil
        #expect(await eventually { client.links.isEmpty })
        var link: String? = "ui.home"
        for _ in 0..<100 where link != nil {
            link = try await client.channels(matching: editor).first?.link
            if link != nil { try await Task.sleep(nanoseconds: 20_000_000) }
        }
        #expect(link == nil, "unlinked on the daemon")
    }

    @Test func scheduleRemovalInDeinitRemovesAtOnce() async throws {
        let daemon = try TestDaemon()
        let client = try await connectedClient(daemon, name: "owner")
        let follower = try await connectedClient(daemon, name: "view")
        defer { client.close(); follower.close() }
        try await client.declare(car)
        var model: RemovingViewModel? = RemovingViewModel(client: client, channel: car)
        let token = try await follow(follower, car)
        _ = model
        model = nil
        #expect(client.declaredChannels.isEmpty, "forgotten synchronously")
        #expect(try await token.ended() == .removed(channel: "car.7"))
        // Not declared (any more): nothing is sent, nothing reported.
        let errors = collectErrors(client)
        client.scheduleRemoval(of: car)
        client.scheduleUnlink(of: editor)
        try await Task.sleep(nanoseconds: 200_000_000)
        #expect(errors.value.isEmpty, "\(errors.value)")
    }

    @MainActor @Test func aMainActorModelOwnsAChannel() async throws {
        let daemon = try TestDaemon()
        let client = try await connectedClient(daemon, name: "owner")
        defer { client.close() }
        var model: ScreenModel? = ScreenModel()
        try await client.declare(car, owner: try #require(model))
        #expect(model?.visible == true)
        model = nil
        var declared = client.declaredChannels
        for _ in 0..<250 where !declared.isEmpty {
            try await Task.sleep(nanoseconds: 20_000_000)
            declared = client.declaredChannels
        }
        #expect(declared.isEmpty)
    }

    @Test func aRestoreThatFailsForGoodIsToldToTheOwnersHandler() async throws {
        let daemon = try ScriptedDaemon()
        let client = HeraldClient(configuration: ClientConfiguration(
            endpoint: .tcp(host: "127.0.0.1", port: daemon.port), reconnect: ReconnectPolicy(initialDelay: 0.05, maxDelay: 0.2)))
        try await client.connect()
        defer { client.close() }
        let global = collectErrors(client)
        let own = LockedValue<[HeraldClientError]>([])
        let model = PlainViewModel()
        try await client.declare(car, owner: model) { error in own.withLock { $0.append(error) } }
        try await client.link(editor, to: home, owner: model) { error in own.withLock { $0.append(error) } }

        daemon.refuse("declare", with: "forbidden", times: 1)
        daemon.refuse("link", with: "cycle", times: 1)
        daemon.dropNewest()
        #expect(await eventually(within: 20) { own.value.count == 2 }, "\(own.value)")
        let kinds = own.value.compactMap { if case .restoreFailed(let kind, _, _) = $0 { kind } else { nil } }
        #expect(Set(kinds.map(\.description)) == ["instance channel", "link to ui.home"])
        #expect(global.value.isEmpty, "\(global.value)")
        #expect(client.declaredChannels.isEmpty && client.links.isEmpty)
        withExtendedLifetime(model) {}
    }
}
