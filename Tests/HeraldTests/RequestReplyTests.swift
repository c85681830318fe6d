import Foundation
@testable import Herald
@testable import HeraldExamples
import HeraldTestSupport
import Testing

@Suite struct RequestReplyTests {
    @Test func typedRequestGetsTheRespondersReply() async throws {
        let daemon = try TestDaemon()
        let responder = try await connectedClient(daemon, name: "adder")
        let requester = try await connectedClient(daemon, name: "asker")
        defer { responder.close(); requester.close() }
        let adder = try startAdder(responder)
        try await adder.ready()
        #expect(await addRemotely(requester, 1, 2) == "sum 3")
        // A generous timeout: the default 1 s expired once with the whole suite running in
        // parallel on two loaded cores (the test is about the reply, not the deadline).
        let raw = try await requester.request(raw: RawJSON(#"{"a":20,"b":22}"#), to: Add.channel, timeout: .seconds(30))
        #expect(raw.data == RawJSON("42"))
        #expect(raw.from == responder.serverInfo?.client)
    }

    @Test func noRespondersIsThrownAtOnce() async throws {
        let daemon = try TestDaemon()
        let client = try await connectedClient(daemon)
        defer { client.close() }
        // A long timeout: only the daemon's immediate no_responders can end this quickly.
        let error = await thrownError { () async throws(HeraldClientError) in try await client.request(Add(a: 1, b: 1), timeout: .seconds(60)) }
        #expect(error == .noResponders(channel: "calc.add"))
        #expect(await addRemotely(client, 1, 1) == "no adder is running")
        // A plain subscriber is a responder too (it receives the request); a locked one is not.
        let listener = try client.subscribe(raw: Add.channel, options: SubscriptionOptions(name: "mute")) { _, _ in }
        try await listener.ready()
        try await client.lock(subscription: "mute")
        #expect(await thrownError { () async throws(HeraldClientError) in try await client.request(Add(a: 1, b: 1), timeout: .seconds(60)) }
                == .noResponders(channel: "calc.add"))
    }

    @Test func silentResponderMeansTimeout() async throws {
        let daemon = try TestDaemon()
        let client = try await connectedClient(daemon)
        defer { client.close() }
        let seen = LockedValue<[String?]>([])
        let silent = try client.subscribe(raw: Add.channel) { _, meta in seen.withLock { $0.append(meta.replyToken) } }
        try await silent.ready()
        let error = await thrownError { () async throws(HeraldClientError) in try await client.request(Add(a: 1, b: 1), timeout: .seconds(0.2)) }
        #expect(error == .timeout)
        #expect(seen.value.count == 1)
        #expect(seen.value.first??.count == 32, "the request carried its reply token")
        // The connection is fine afterwards (a req timeout is not a link timeout).
        #expect(try await client.ping() > 0)
        #expect(client.connectionState.isConnected)
    }

    /// Without a `timeout`, a request waits `ClientConfiguration.requestTimeout` (issue 38: it
    /// used to wait 1 s whatever the configuration said). Shown with a configured 2.5 s: the
    /// daemon's `timeout` cannot come before it, which a 1 s default would.
    @Test func aRequestWithoutATimeoutWaitsTheConfiguredRequestTimeout() async throws {
        let daemon = try TestDaemon()
        let client = HeraldClient(configuration: ClientConfiguration(endpoint: .tcp(host: "127.0.0.1", port: daemon.port),
                                                                     requestTimeout: 2.5))
        try await client.connect()
        defer { client.close() }
        let silent = try client.subscribe(raw: Add.channel) { _, _ in }
        try await silent.ready()
        let started = Date()
        let error = await thrownError { () async throws(HeraldClientError) in try await client.request(Add(a: 1, b: 1)) }
        #expect(error == .timeout)
        #expect(Date().timeIntervalSince(started) >= 2.4, "waited the configured 2.5 s, not 1 s")
        withExtendedLifetime(silent) {}
    }

    @Test func groupedRespondersShareTheRequests() async throws {
        struct Who: HeraldRequest {
            typealias Reply = String
            static let channel = Channel("who", "works")
        }
        let daemon = try TestDaemon()
        let workers = [try await connectedClient(daemon, name: "w1"), try await connectedClient(daemon, name: "w2")]
        let requester = try await connectedClient(daemon, name: "boss")
        defer { workers.forEach { $0.close() }; requester.close() }
        var tokens: [Subscription] = []
        for (index, worker) in workers.enumerated() {
            let token = try worker.respond(to: Who.self, options: SubscriptionOptions(group: "pool")) { _, _ in "w\(index + 1)" }
            try await token.ready()
            tokens.append(token)
        }
        var answers: [String: Int] = [:]
        for _ in 0..<10 { answers[try await requester.request(Who(), timeout: .seconds(5)), default: 0] += 1 }
        #expect(answers == ["w1": 5, "w2": 5], "each request goes to one member, round robin")
        withExtendedLifetime(tokens) {}
    }

    @Test func throwingResponderSendsNoReplyAndReports() async throws {
        struct Refused: Error {}
        let daemon = try TestDaemon()
        let responder = try await connectedClient(daemon, name: "grumpy")
        let requester = try await connectedClient(daemon)
        defer { responder.close(); requester.close() }
        let errors = collectErrors(responder)
        let token = try responder.respond(to: Add.self) { _, _ in throw Refused() }
        try await token.ready()
        let error = await thrownError { () async throws(HeraldClientError) in try await requester.request(Add(a: 1, b: 2), timeout: .seconds(0.3)) }
        #expect(error == .timeout)
        #expect(await eventually { errors.value.contains { if case .responderFailed(_, "calc.add", _) = $0 { true } else { false } } })
        #expect(token.isActive, "one failed answer does not end the responder")
    }

    @Test func replyOfTheWrongTypeIsADecodingError() async throws {
        let daemon = try TestDaemon()
        let client = try await connectedClient(daemon)
        defer { client.close() }
        let wrong = try client.subscribe(raw: Add.channel) { [weak client] _, meta in
            if let token = meta.replyToken { try? client?.reply(to: token, raw: RawJSON(#""three""#)) }
        }
        try await wrong.ready()
        let error = await thrownError { () async throws(HeraldClientError) in try await client.request(Add(a: 1, b: 2), timeout: .seconds(5)) }
        guard case .decoding(_, let channel, _)? = error else {
            Issue.record("expected a decoding error, got \(String(describing: error))")
            return
        }
        #expect(channel == "calc.add")
    }

    @Test func concurrentRequestsEachGetTheirOwnReply() async throws {
        let daemon = try TestDaemon()
        let responder = try await connectedClient(daemon, name: "adder")
        let requester = try await connectedClient(daemon)
        defer { responder.close(); requester.close() }
        let adder = try startAdder(responder)
        try await adder.ready()
        let sums = try await withThrowingTaskGroup(of: (Int, Int).self) { group in
            for n in 0..<40 {
                group.addTask { (n, try await requester.request(Add(a: n, b: 1000), timeout: .seconds(10))) }
            }
            var sums: [Int: Int] = [:]
            for try await (n, sum) in group { sums[n] = sum }
            return sums
        }
        #expect(sums.count == 40)
        #expect(sums.allSatisfy { $0.value == $0.key + 1000 })
        #expect(try await requester.stats()["requests"] == 0, "nothing left pending in the daemon")
    }

    @Test func theDeprecatedSecondsFormTurnsBadValuesIntoZeroNotATrap() {
        #expect(Duration.clamped(seconds: .nan) == .zero)
        #expect(Duration.clamped(seconds: -1) == .zero)
        #expect(Duration.clamped(seconds: .infinity) == .seconds(1e9))
        #expect(Duration.clamped(seconds: 0.25) == .milliseconds(250))
        #expect(Duration.milliseconds(1500).inSeconds == 1.5)
    }

    @Test func badTimeoutsAreClampedNotRefused() async throws {
        let daemon = try TestDaemon()
        let client = try await connectedClient(daemon)
        defer { client.close() }
        let silent = try client.subscribe(raw: Add.channel) { _, _ in }
        try await silent.ready()
        for timeout: Duration in [.zero, .seconds(-1), .microseconds(100)] {
            #expect(await thrownError { () async throws(HeraldClientError) in try await client.request(Add(a: 1, b: 1), timeout: timeout) } == .timeout,
                    "timeout \(timeout)")
        }
    }
}
