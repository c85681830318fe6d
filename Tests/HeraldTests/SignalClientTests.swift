import Herald
import HeraldTestSupport
import Testing

/// A typed signal: "save the settings", raised deep in the settings screen.
struct SaveSettings: HeraldEvent, Equatable {
    static let channel = Channel("app", "settings", "profile")
    var field: String
}

/// Signals through the client: handlers at two levels, callbacks, results, failures.
@Suite struct SignalClientTests {
    /// A pass at the profile level bubbles to the settings level, whose stop ends the route;
    /// its callbacks reach the sender in order, before the result.
    @Test func passBubblesUpAndStopEndsTheRouteWithCallbacksFirst() async throws {
        let daemon = try TestDaemon()
        let profile = try await connectedClient(daemon, name: "profile")
        let screen = try await connectedClient(daemon, name: "screen")
        let sender = try await connectedClient(daemon, name: "sender")
        defer { profile.close(); screen.close(); sender.close() }
        let seen = LockedValue<[String]>([])
        let low = try profile.handle(SaveSettings.self, options: SubscriptionOptions(name: "profile")) { save, context in
            seen.withLock { $0.append("profile:\(save.field)@\(context.level.name)") }
            return .pass
        }
        let high = try screen.handle(raw: Channel("app", "settings"), options: SubscriptionOptions(name: "screen")) { _, context in
            seen.withLock { $0.append("screen@\(context.level.name) from \(context.origin.name)") }
            for step in 1...3 { try context.callback(["step": step]) }
            return .stop
        }
        try await low.ready()
        try await high.ready()

        let call = try sender.signal(SaveSettings(field: "name"), callbacks: [String: Int].self, timeout: .seconds(5))
        var steps: [Int] = []
        for await callback in call.callbacks {
            steps.append(callback.value["step"] ?? -1)
            #expect(callback.from == screen.serverInfo?.client)
        }
        let result = try await call.result()
        #expect(steps == [1, 2, 3], "every callback, in order, before the stream finished with the result")
        let screenID = try #require(screen.serverInfo?.client)
        #expect(result.handledBy == "\(screenID)/screen")
        #expect(result.at == "app.settings")
        #expect(result.hops == 2)
        #expect(result.timeouts.isEmpty)
        #expect(seen.value == ["profile:name@app.settings.profile", "screen@app.settings from app.settings.profile"])

        // Both pass: the route runs out, nobody handled it.
        high.cancel()
        let passer = try screen.handle(raw: Channel("app", .rest), options: SubscriptionOptions(name: "passer")) { _, _ in .pass }
        try await passer.ready()
        let unhandled = try await sender.signal(SaveSettings(field: "mail"), timeout: .seconds(5)).result()
        #expect(unhandled.handledBy == nil)
        #expect(unhandled.at == nil)
        #expect(unhandled.hops == 3, "profile and passer at app.settings.profile, passer at app.settings (app.> does not match app)")
    }

    /// A signal nobody handles: a result with no handler, no hops, and its callback stream ends.
    @Test func unhandledSignalReportsNobody() async throws {
        let daemon = try TestDaemon()
        let sender = try await connectedClient(daemon)
        defer { sender.close() }
        let call = try sender.signal(raw: RawJSON("\"hi\""), on: Channel("nobody", "home"))
        for await _ in call.callbacks { Issue.record("no handler, no callback") }
        let result = try await call.result()
        #expect(result.handledBy == nil)
        #expect(result.at == nil)
        #expect(result.hops == 0)
        #expect(result.timeouts.isEmpty)
        #expect(!result.id.isEmpty)
    }

    /// A signal that does not decode as the handler's type goes to the error handler and
    /// counts as pass (answered at once, not a timeout), so the next level still gets it.
    @Test func undecodableSignalIsReportedAndPassed() async throws {
        let daemon = try TestDaemon()
        let handler = try await connectedClient(daemon)
        let sender = try await connectedClient(daemon)
        defer { handler.close(); sender.close() }
        let errors = collectErrors(handler)
        let typed = try handler.handle(SaveSettings.self, options: SubscriptionOptions(name: "typed")) { _, _ in
            Issue.record("must not be called with an undecodable signal")
            return .stop
        }
        let above = try handler.handle(raw: Channel("app"), options: SubscriptionOptions(name: "above")) { data, _ in
            data == RawJSON("42") ? .stop : .pass
        }
        try await typed.ready()
        try await above.ready()
        let result = try await sender.signal(raw: RawJSON("42"), on: SaveSettings.channel, timeout: .seconds(30)).result()
        let handlerID = try #require(handler.serverInfo?.client)
        #expect(result.handledBy == "\(handlerID)/above")
        #expect(result.hops == 2)
        #expect(result.timeouts.isEmpty, "a decoding failure answers pass at once")
        #expect(await eventually { errors.value.contains { if case .decoding = $0 { true } else { false } } })
    }

    /// A handler that throws is reported and counts as pass.
    @Test func throwingHandlerIsReportedAndPassed() async throws {
        struct Refused: Error {}
        let daemon = try TestDaemon()
        let handler = try await connectedClient(daemon)
        defer { handler.close() }
        let errors = collectErrors(handler)
        let token = try handler.handle(raw: Channel("x", "y"), options: SubscriptionOptions(name: "thrower")) { _, _ in
            throw Refused()
        }
        try await token.ready()
        let result = try await handler.signal(raw: nil, on: Channel("x", "y"), timeout: .seconds(30)).result()
        #expect(result.handledBy == nil)
        #expect(result.hops == 1)
        #expect(result.timeouts.isEmpty)
        #expect(await eventually { errors.value.contains { if case .signalHandlerFailed = $0 { true } else { false } } })
    }

    /// Several signals under way at once: each gets exactly its own callbacks, even though
    /// the daemon names a signal only in its result (callbacks are matched or kept until then).
    @Test func concurrentSignalsGetTheirOwnCallbacks() async throws {
        let daemon = try TestDaemon()
        let handler = try await connectedClient(daemon)
        let sender = try await connectedClient(daemon)
        defer { handler.close(); sender.close() }
        let token = try handler.handle(raw: Channel("echo"), options: SubscriptionOptions(name: "echo")) { data, context in
            try context.callback(raw: data)
            try context.callback(raw: data)
            return .stop
        }
        try await token.ready()
        let calls = try (0..<5).map { n throws(HeraldClientError) in
            try sender.signal(raw: RawJSON("\(n)"), on: Channel("echo", "x"), timeout: .seconds(30))
        }
        for (n, call) in calls.enumerated() {
            var got: [String] = []
            for await callback in call.callbacks { got.append(callback.value?.description ?? "none") }
            #expect(got == ["\(n)", "\(n)"])
            #expect(try await call.result().at == "echo")
        }
    }
}
